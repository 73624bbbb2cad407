package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * threads.start_join (seed 003, Table 3): {@code count} threads that do
 * nothing are created before the measurement (kept in an array, as the
 * seed's list); the measurement starts each, then joins each.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 30)
@Fork(1)
public class StartJoin {
    @Param({"platform"})
    public String model;

    @Param({"10000"})
    public int count;

    private Thread.Builder builder;
    private Thread[] threads;

    @Setup(Level.Trial)
    public void setup() {
        builder = Models.builder(model);
    }

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
