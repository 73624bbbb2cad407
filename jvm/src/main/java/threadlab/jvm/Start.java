package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * threads.start (seed 003, Table 2): create and start {@code count} threads
 * that end at once.  Joining them is clean-up, in the iteration's tear-down,
 * outside the measurement.
 */
@OutputTimeUnit(TimeUnit.SECONDS)
public class Start extends ModelBenchmark {
    @Param({"100000"})
    public int count;

    private Thread[] threads;

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
