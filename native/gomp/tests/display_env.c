/* display_env.c - omp_display_env(0), for gomp.display_env
 * (display_env_same.sh), which compares its output under libgomp and
 * under libthreadlab-gomp. */
#include <omp.h>

int main(void)
{
    omp_display_env(0);
    return 0;
}
