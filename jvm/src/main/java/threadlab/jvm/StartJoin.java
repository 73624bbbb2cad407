package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * threads.start_join (seed 003, Table 3): {@code count} threads that do
 * nothing are created before the measurement (kept in an array, as the
 * seed's list); the measurement starts each, then joins each.
 */
@OutputTimeUnit(TimeUnit.SECONDS)
public class StartJoin extends ModelBenchmark {
    @Param({"10000"})
    public int count;

    private Thread[] threads;

    @Setup(Level.Iteration)
    public void create() {
        threads = Models.unstarted(builder, count, Models.NOOP);
    }

    @Benchmark
    public void run() throws InterruptedException {
        Models.startAll(threads);
        for (Thread t : threads) {
            t.join();
        }
    }

    /** run() has joined them all (JMH skips the tear-down when run() fails). */
    @TearDown(Level.Iteration)
    public void release() {
        threads = null;
    }
}
