package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.*;

/**
 * threads.park_pingpong: two threads of the model hand a turn back and forth
 * with LockSupport.park/unpark, {@code handoffs} one-way handoffs per
 * measurement (the launcher divides).  Each handoff carries the next
 * sequence number and each side waits for exactly its own, so the threads
 * really alternate; a lost handoff fails the benchmark.  Both threads are
 * started and joined inside the measurement: two starts and joins, against
 * tens of thousands of handoffs.
 */
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ParkPingPong extends ModelBenchmark {
    @Param({"20000"})
    public int handoffs;

    private volatile int seq;
    private volatile Thread ping;
    private volatile Thread pong;

    @Setup(Level.Trial)
    public void setup() {
        if (handoffs < 2 || handoffs % 2 != 0) {
            throw new IllegalArgumentException("handoffs " + handoffs + ": expected an even number >= 2");
        }
    }

    private void side(int first) {
        final int n = handoffs;
        for (int i = first; i < n; i += 2) {
            while (seq != i) {
                LockSupport.park(this);
            }
            seq = i + 1;
            LockSupport.unpark(first == 0 ? pong : ping);
        }
    }

    @Setup(Level.Iteration)
    public void create() {
        seq = 0;
        ping = builder.unstarted(() -> side(0));
        pong = builder.unstarted(() -> side(1));
    }

    @Benchmark
    public void run() throws InterruptedException {
        ping.start();
        pong.start();
        ping.join();
        pong.join();
        if (seq != handoffs) {
            throw new IllegalStateException("threadlab: check failed: " + seq + " handoffs of " + handoffs);
        }
    }
}
