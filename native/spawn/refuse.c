/* refuse.c - every MPI call that takes a communicator and that the library
 * does not implement (refused.def): refused, with an error naming it, on a
 * communicator of thread tasks, so that the real MPI never receives one of
 * the library's handles; passed through untouched otherwise. */
#define _GNU_SOURCE
#include "internal.h"

#define TLSP_REFUSE1(name, params, args, c)                                                             \
    TLSP_EXPORT int name params                                                                        \
    {                                                                                                  \
        int bad_;                                                                                      \
        tlsp_view *v_ = tlsp_view_of((c), &bad_);                                                      \
        if (TLSP_UNLIKELY(bad_))                                                                       \
            return tlsp_bad_comm((c), #name);                                                          \
        if (TLSP_UNLIKELY(v_ != NULL))                                                                 \
            return tlsp_refuse(v_, #name);                                                             \
        return P##name args;                                                                           \
    }

#define TLSP_REFUSE2(name, params, args, c1, c2)                                                        \
    TLSP_EXPORT int name params                                                                        \
    {                                                                                                  \
        int bad1_, bad2_;                                                                              \
        tlsp_view *v1_ = tlsp_view_of((c1), &bad1_);                                                   \
        tlsp_view *v2_ = tlsp_view_of((c2), &bad2_);                                                   \
        if (TLSP_UNLIKELY(bad1_))                                                                      \
            return tlsp_bad_comm((c1), #name);                                                         \
        if (TLSP_UNLIKELY(bad2_))                                                                      \
            return tlsp_bad_comm((c2), #name);                                                         \
        if (TLSP_UNLIKELY(v1_ != NULL || v2_ != NULL))                                                 \
            return tlsp_refuse(v1_ ? v1_ : v2_, #name);                                                \
        return P##name args;                                                                           \
    }

#include "refused.def"
