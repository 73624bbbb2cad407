/*
 * context.c - context creation; the portable switch for architectures
 * without hand-written assembly.
 *
 * x86-64 (TLU_CTX_ASM): tlu_ctx_switch and the trampoline are in
 * context_x86_64.S; this file only lays out the initial frame.
 *
 * Elsewhere (TLU_CTX_UCONTEXT): a new context is booted once with
 * makecontext/setcontext (which costs a sigprocmask system call, paid once
 * per thread start), and every later switch is a __builtin_setjmp /
 * __builtin_longjmp pair: callee-saved registers, frame and stack pointer,
 * no system call. swapcontext is not used on the switch path because glibc
 * saves and restores the signal mask with a system call every time.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>

#if TLU_CTX_ASM

void tlu_ctx_trampoline(void) __attribute__((visibility("hidden")));

static uint64_t fpu_init_word = 0x037f00001f80ull; /* x87 CW 0x37f, MXCSR 0x1f80 */

void tlu_ctx_capture_fpu(void)
{
    uint32_t mxcsr;
    uint16_t cw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    fpu_init_word = (uint64_t)(mxcsr & 0xffc0u) | ((uint64_t)cw << 32);
}

void tlu_ctx_init(tlu_ctx *ctx, void *lo, size_t size, void (*entry)(void *), void *arg)
{
    uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 16 - 64);
    sp[0] = fpu_init_word;
    sp[1] = 0;                            /* r15 */
    sp[2] = 0;                            /* r14 */
    sp[3] = (uint64_t)(uintptr_t)entry;   /* r13 */
    sp[4] = (uint64_t)(uintptr_t)arg;     /* r12 */
    sp[5] = 0;                            /* rbx */
    sp[6] = 0;                            /* rbp */
    sp[7] = (uint64_t)(uintptr_t)tlu_ctx_trampoline;
    sp[8] = 0; /* fake return address of the trampoline's frame */
    sp[9] = 0;
    ctx->sp = sp;
}

#else /* TLU_CTX_UCONTEXT */

#include <ucontext.h>

void tlu_ctx_capture_fpu(void)
{
}

void tlu_ctx_init(tlu_ctx *ctx, void *lo, size_t size, void (*entry)(void *), void *arg)
{
    memset(ctx->jb, 0, sizeof ctx->jb);
    ctx->entry = entry;
    ctx->arg = arg;
    ctx->lo = lo;
    ctx->size = size;
}

static __thread tlu_ctx *boot_ctx;
/* not on the stack: setcontext never returns to pop that frame (and ASan
 * would keep its redzones poisoned) */
static __thread ucontext_t boot_uc;

static void ctx_boot(void)
{
    tlu_ctx *c = boot_ctx;
    c->entry(c->arg);
    abort();
}

static TL_NOINLINE _Noreturn void ctx_jump(void **jb)
{
    __builtin_longjmp(jb, 1);
}

static TL_NOINLINE _Noreturn void ctx_boot_switch(tlu_ctx *to)
{
    ucontext_t *uc = &boot_uc;
    if (getcontext(uc) != 0)
        abort();
    uc->uc_stack.ss_sp = to->lo;
    uc->uc_stack.ss_size = to->size;
    uc->uc_link = NULL;
    makecontext(uc, ctx_boot, 0);
    to->size = 0;
    boot_ctx = to;
    setcontext(uc);
    abort();
}

TL_NOINLINE void tlu_ctx_switch(tlu_ctx *from, tlu_ctx *to)
{
    if (__builtin_setjmp(from->jb) == 0) {
        if (to->size)
            ctx_boot_switch(to);
        ctx_jump(to->jb);
    }
}

#endif
