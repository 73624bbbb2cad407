/* model_common.h - helpers shared by the model implementations (not part
 * of the interface the benchmarks see). */
#ifndef THREADLAB_MODEL_COMMON_H
#define THREADLAB_MODEL_COMMON_H

#ifdef __cplusplus
extern "C" {
#endif

/* Resident memory of this process (/proc/self/statm), bytes; -1 if unread. */
double tl_model_self_rss(void);

#ifdef __cplusplus
}
#endif
#endif
