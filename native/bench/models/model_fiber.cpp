// model_fiber.cpp - the boost-fiber model: Boost.Fiber fibers behind the C
// interface of threadlab/model.h.  All fibers run on the program's main
// thread (Boost.Fiber's default round_robin scheduler, one kernel thread):
// the same setting as the ult model on one virtual processor.
#include <boost/fiber/all.hpp>
#include <boost/version.hpp>
#include <malloc.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>

#include "threadlab/model.h"
#include "threadlab/resident.h"

namespace {

namespace bf = boost::fibers;

static_assert(sizeof(bf::mutex) <= sizeof(tl_mmutex) && alignof(bf::mutex) <= alignof(tl_mmutex),
              "boost::fibers::mutex fits a tl_mmutex");
static_assert(sizeof(bf::condition_variable) <= sizeof(tl_mcond) &&
                  alignof(bf::condition_variable) <= alignof(tl_mcond),
              "boost::fibers::condition_variable fits a tl_mcond");

// Stacks come from malloc (fixedsize_stack): a stack costs the pages its
// fiber touches, and stays clear of vm.max_map_count (an mmap per stack
// would hit it at 65,530 fibers).  64 KiB as the ult model's default; the
// small stack holds a body that only blocks on a fiber primitive plus the
// fiber's control block, which Boost.Fiber keeps at the top of the stack.
constexpr std::size_t default_stack_bytes = 64 * 1024;
constexpr std::size_t small_stack_bytes = 8 * 1024;

// tl_model_exit unwinds to the fiber's entry (Boost.Fiber has no exit
// call); the benchmark sources are compiled with -fexceptions for this.
struct fiber_exit {};

void fiber_entry(tl_mthread_fn fn, void *arg)
{
    try {
        fn(arg);
    } catch (const fiber_exit &) {
    }
}

bf::mutex *as_mutex(tl_mmutex *m) { return std::launder(reinterpret_cast<bf::mutex *>(m)); }
bf::condition_variable *as_cond(tl_mcond *c)
{
    return std::launder(reinterpret_cast<bf::condition_variable *>(c));
}

// Boost reports errors as exceptions; the interface speaks errno values.
template <typename F> int errno_of(F &&f)
{
    try {
        f();
        return 0;
    } catch (const std::system_error &e) {
        return e.code().value() ? e.code().value() : EINVAL;
    } catch (const std::bad_alloc &) {
        return ENOMEM;
    } catch (const fiber_exit &) {
        throw;
    } catch (...) {
        return EINVAL;
    }
}

} // namespace

extern "C" {

const char tl_model_name[] = "boost-fiber";
const char *const tl_model_no_instantiate =
    "a Boost.Fiber fiber is scheduled by its constructor (launch::post only delays its first run to "
    "the creator's next suspension, which is threads.start): there is no created-but-not-started fiber";
const char *const tl_model_capacity_counts[] = {"10000", "100000", nullptr};
const char *const tl_model_capacity_quick[] = {"1000", nullptr};

int tl_model_init(tl_ctx *) { return 0; }

void tl_model_describe(tl_ctx *ctx)
{
    tl_extra_str(ctx, "boost", BOOST_LIB_VERSION);
    tl_extra_num(ctx, "stack_size", static_cast<double>(default_stack_bytes));
}

void tl_model_fini(void) {}

// Freed stacks stay in malloc's heap, resident, for the next fibers.
int tl_model_release_cached(void)
{
    malloc_trim(0);
    return 0;
}

size_t tl_model_stack_bytes(tl_mstack stack)
{
    return stack == TL_MSTACK_SMALL ? small_stack_bytes : default_stack_bytes;
}

// No kernel task, no mapping; resident: the touched stack pages (the
// control block at the top, malloc's header at the bottom).
tl_model_cost tl_model_thread_cost(tl_mstack stack)
{
    tl_model_cost cost{};
    cost.resident_bytes = stack == TL_MSTACK_SMALL ? 12 * 1024 : 16 * 1024;
    return cost;
}

double tl_model_resident_bytes(void) { return static_cast<double>(tl_resident_bytes()); }

int tl_model_create(tl_mthread *t, tl_mthread_fn fn, void *arg, tl_mstack stack)
{
    return errno_of([&] {
        auto *f = new bf::fiber(std::allocator_arg, bf::fixedsize_stack(tl_model_stack_bytes(stack)),
                                fiber_entry, fn, arg);
        *t = reinterpret_cast<tl_mthread>(f);
    });
}

int tl_model_instantiate(tl_mthread *, tl_mthread_fn, void *) { return ENOTSUP; }

int tl_model_start_instantiated(tl_mthread) { return ENOTSUP; }

int tl_model_join(tl_mthread t)
{
    auto *f = reinterpret_cast<bf::fiber *>(t);
    int rc = errno_of([&] { f->join(); });
    if (rc == 0)
        delete f;
    return rc;
}

void tl_model_yield(void) { boost::this_fiber::yield(); }

void tl_model_exit(void) { throw fiber_exit{}; }

void tl_model_sleep_ms(unsigned ms) { boost::this_fiber::sleep_for(std::chrono::milliseconds(ms)); }

int tl_model_mutex_init(tl_mmutex *m)
{
    return errno_of([&] { new (m) bf::mutex(); });
}

int tl_model_mutex_destroy(tl_mmutex *m)
{
    as_mutex(m)->~mutex();
    return 0;
}

int tl_model_mutex_lock(tl_mmutex *m)
{
    return errno_of([&] { as_mutex(m)->lock(); });
}

int tl_model_mutex_unlock(tl_mmutex *m)
{
    return errno_of([&] { as_mutex(m)->unlock(); });
}

int tl_model_cond_init(tl_mcond *c)
{
    return errno_of([&] { new (c) bf::condition_variable(); });
}

int tl_model_cond_destroy(tl_mcond *c)
{
    as_cond(c)->~condition_variable();
    return 0;
}

int tl_model_cond_wait(tl_mcond *c, tl_mmutex *m)
{
    // The caller holds m: adopt it for the wait, hand it back held.
    std::unique_lock<bf::mutex> lock(*as_mutex(m), std::adopt_lock);
    int rc = errno_of([&] { as_cond(c)->wait(lock); });
    lock.release();
    return rc;
}

int tl_model_cond_signal(tl_mcond *c)
{
    as_cond(c)->notify_one();
    return 0;
}

int tl_model_cond_broadcast(tl_mcond *c)
{
    as_cond(c)->notify_all();
    return 0;
}

} // extern "C"
