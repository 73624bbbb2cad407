/* model_common.c - helpers shared by the model implementations. */

#include "model_common.h"
#include "threadlab/resident.h"

double tl_model_self_rss(void)
{
    return (double)tl_resident_bytes();
}
