/* kernels.c - the kernels of the study, in its order. */
#include <string.h>

#include "threadlab/apps.h"

const tl_app_kernel *const tl_app_kernels[] = {
    &tl_app_kernel_mips, &tl_app_kernel_mflops, &tl_app_kernel_pi, &tl_app_kernel_trapezoid, NULL,
};

const tl_app_kernel *tl_app_find_kernel(const char *name)
{
    for (const tl_app_kernel *const *k = tl_app_kernels; *k; k++)
        if (strcmp((*k)->name, name) == 0)
            return *k;
    return NULL;
}
