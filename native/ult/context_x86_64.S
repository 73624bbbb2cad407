/*
 * context_x86_64.S - user-level context switch, x86-64 System V.
 *
 * tlu_ctx_switch(tlu_ctx *from, tlu_ctx *to)   rdi = from, rsi = to
 *
 * Entered with the resume address of the suspending context on top of its
 * stack. The hot path (tlu_ctx_jump in internal.h) pushes that address
 * itself and enters with a jmp; cold paths may simply call it. Either way
 * the code saves what the ABI says a callee preserves: rbx, rbp, r12-r15,
 * the stack pointer, and the FPU control words (MXCSR control bits and the
 * x87 control word); everything else is caller-saved and dead at a switch
 * point. The saved state is pushed on the suspended stack; only the stack
 * pointer goes into from->sp. The control words are reloaded only when
 * they differ from the current ones (ldmxcsr and fldcw are slow and nearly
 * always redundant: all ULTs normally share the process's FP settings).
 *
 * Resumption pops the resume address and jumps to it. Together with the
 * jmp entry this never pushes or pops the return-stack buffer: a call/ret
 * pair split across two contexts would leave it off by one and make the
 * next return of the resumed thread mispredict. The jmp itself is
 * predicted by the BTB. No system call: the signal mask is per kernel
 * thread and is not part of a ULT's context.
 *
 * Frame of a suspended context, from its saved sp upwards:
 *   0: MXCSR (4 bytes), x87 CW (2 bytes), unused (2 bytes)
 *   8: r15  16: r14  24: r13  32: r12  40: rbx  48: rbp  56: resume address
 */
    .text
    .globl  tlu_ctx_switch
    .hidden tlu_ctx_switch
    .type   tlu_ctx_switch, @function
    .p2align 4
tlu_ctx_switch:
    .cfi_startproc
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    pushq   %rbx
    .cfi_adjust_cfa_offset 8
    pushq   %r12
    .cfi_adjust_cfa_offset 8
    pushq   %r13
    .cfi_adjust_cfa_offset 8
    pushq   %r14
    .cfi_adjust_cfa_offset 8
    pushq   %r15
    .cfi_adjust_cfa_offset 8
    pushq   %rax                /* room for the control words */
    .cfi_adjust_cfa_offset 8
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, %rdx          /* this frame, to compare the words */
    movq    %rsp, (%rdi)        /* from->sp */
    movq    (%rsi), %rsp        /* to->sp */
    movl    (%rsp), %eax        /* MXCSR: compare the control bits only */
    xorl    (%rdx), %eax        /* (the status flags are caller-saved) */
    testl   $0xffc0, %eax
    jnz     .Lload_fpu
    movzwl  4(%rsp), %eax
    cmpw    4(%rdx), %ax
    jne     .Lload_fpu
.Lrestore:
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    popq    %rdx
    jmp     *%rdx
.Lload_fpu:
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    jmp     .Lrestore
    .cfi_endproc
    .size   tlu_ctx_switch, .-tlu_ctx_switch

/*
 * First code a new context runs: its initial frame (tlu_ctx_init) holds
 * the argument in r12 and the entry function in r13; the stack pointer is
 * 16-byte aligned here, so after the push the entry sees the alignment a
 * call would give it. The entry never returns; entering it with a jmp
 * keeps the return-stack buffer balanced.
 */
    .globl  tlu_ctx_trampoline
    .hidden tlu_ctx_trampoline
    .type   tlu_ctx_trampoline, @function
    .p2align 4
tlu_ctx_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    xorl    %ebp, %ebp
    movq    %r12, %rdi
    pushq   $0                  /* a null return address ends backtraces; */
    jmp     *%r13               /* jmp, not call: the entry never returns */
    .cfi_endproc
    .size   tlu_ctx_trampoline, .-tlu_ctx_trampoline

/*
 * void tlu_ctx_call_on(void *sp, void (*fn)(void *), void *arg)
 *
 * Calls fn(arg) with the stack pointer set to sp (rounded down to 16),
 * then returns on the original stack. The runtime uses it to run its slow
 * paths (malloc, mmap, locks, messages) on the VP's scheduler stack while
 * a ULT with a tiny stack is running, so that runtime code never needs
 * more than a few hundred bytes of a ULT's stack.
 */
    .globl  tlu_ctx_call_on
    .hidden tlu_ctx_call_on
    .type   tlu_ctx_call_on, @function
    .p2align 4
tlu_ctx_call_on:
    .cfi_startproc
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_offset rbp, -16
    movq    %rsp, %rbp
    .cfi_def_cfa_register rbp
    andq    $-16, %rdi
    movq    %rdi, %rsp
    movq    %rdx, %rdi
    callq   *%rsi
    movq    %rbp, %rsp
    .cfi_def_cfa_register rsp
    popq    %rbp
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size   tlu_ctx_call_on, .-tlu_ctx_call_on

    .section .note.GNU-stack, "", @progbits
