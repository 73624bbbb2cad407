/* model_heap.c - shared memory for the models whose threads share the
 * address space (pthread, ult, boost-fiber): the heap. */
#include <stdlib.h>

#include "threadlab/model.h"

void *tl_model_shared_alloc(size_t bytes)
{
    return calloc(1, bytes);
}

void tl_model_shared_free(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}
