package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * threads.start (seed 003, Table 2): create and start {@code count} threads
 * that end at once.  Joining them is clean-up, in the iteration's tear-down,
 * outside the measurement.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 30)
@Fork(1)
public class Start {
    @Param({"platform"})
    public String model;

    @Param({"100000"})
    public int count;

    private Thread.Builder builder;
    private Thread[] threads;

    @Setup(Level.Trial)
    public void setup() {
        builder = Models.builder(model);
    }

    @Setup(Level.Iteration)
    public void allocate() {
        threads = new Thread[count];
    }

    @Benchmark
    public Thread[] run() {
        Models.startNew(builder, threads, Models.NOOP);
        return threads;
    }

    @TearDown(Level.Iteration)
    public void join() throws InterruptedException {
        Models.joinAll(threads);
        threads = null;
    }
}
