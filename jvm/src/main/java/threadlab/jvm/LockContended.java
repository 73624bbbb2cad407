package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.openjdk.jmh.annotations.*;

/**
 * threads.lock_contended: {@code threads} threads of the model increment a
 * shared counter under one lock, {@code ops} lock+unlock in all per
 * measurement (the launcher divides); the counter is checked.
 *
 * lock = reentrant (java.util.concurrent.locks.ReentrantLock: a blocked
 * virtual thread unmounts) or synchronized (a monitor: pins a blocked
 * virtual thread to its carrier on JDK 21-23; not since JDK 24, JEP 491).
 *
 * pinned = yes runs each thread's loop inside a native frame (a call of
 * libc qsort whose comparator is a Java upcall, NativeFrame): a virtual
 * thread that blocks with a native frame on its stack is pinned on every
 * JDK, so yes against no shows what pinning costs.  For platform threads
 * the same construct is a control (one upcall per thread).
 */
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class LockContended extends ModelBenchmark {
    @Param({"reentrant"})
    public String lock;

    @Param({"4"})
    public int threads;

    @Param({"no"})
    public String pinned;

    @Param({"200000"})
    public int ops;

    private final ReentrantLock reentrant = new ReentrantLock();
    private final Object monitor = new Object();
    private long counter;
    private Thread[] workers;

    @Setup(Level.Trial)
    public void setup() {
        if (!lock.equals("reentrant") && !lock.equals("synchronized")) {
            throw new IllegalArgumentException("lock " + lock + ": expected reentrant or synchronized");
        }
        if (!pinned.equals("yes") && !pinned.equals("no")) {
            throw new IllegalArgumentException("pinned " + pinned + ": expected yes or no");
        }
        if (pinned.equals("yes") && !NativeFrame.available()) {
            throw new UnsupportedOperationException("threadlab: unsupported: " + NativeFrame.unavailableReason());
        }
        if (threads < 1 || ops % threads != 0) {
            throw new IllegalArgumentException("ops " + ops + " must be a multiple of threads " + threads);
        }
    }

    private void reentrantLoop(int n) {
        final ReentrantLock l = reentrant;
        for (int i = 0; i < n; i++) {
            l.lock();
            try {
                counter++;
            } finally {
                l.unlock();
            }
        }
    }

    private void synchronizedLoop(int n) {
        final Object m = monitor;
        for (int i = 0; i < n; i++) {
            synchronized (m) {
                counter++;
            }
        }
    }

    @Setup(Level.Iteration)
    public void create() {
        counter = 0;
        final int perThread = ops / threads;
        final Runnable loop = lock.equals("reentrant") ? () -> reentrantLoop(perThread) : () -> synchronizedLoop(perThread);
        final Runnable body = pinned.equals("yes") ? () -> NativeFrame.run(loop) : loop;
        workers = Models.unstarted(builder, threads, body);
    }

    @Benchmark
    public void run() throws InterruptedException {
        Models.startAll(workers);
        for (Thread t : workers) {
            t.join();
        }
        // join orders every worker's increments before this read.
        if (counter != ops) {
            throw new IllegalStateException("threadlab: check failed: counter " + counter + ", expected " + ops);
        }
    }
}
