package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * threads.create_join: a thread of the model creates, starts and joins one
 * thread that ends at once, {@code ops} times in a row; the launcher
 * divides by ops (time per create + start + join).  The creating thread is
 * of the model too (a driver started and joined by the benchmark thread,
 * once per measurement), so a virtual thread's join parks a virtual thread
 * rather than JMH's platform thread.
 */
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CreateJoin extends ModelBenchmark {
    @Param({"2000"})
    public int ops;

    private Thread driver;
    private volatile Throwable failure;

    private void loop() {
        Thread.Builder b = builder;
        try {
            for (int i = 0; i < ops; i++) {
                b.start(Models.NOOP).join();
            }
        } catch (Throwable t) {
            failure = t;
        }
    }

    @Setup(Level.Iteration)
    public void create() {
        failure = null;
        driver = builder.unstarted(this::loop);
    }

    @Benchmark
    public void run() throws InterruptedException {
        driver.start();
        driver.join();
        if (failure != null) {
            throw new IllegalStateException("threadlab: create+join failed: " + failure, failure);
        }
    }
}
