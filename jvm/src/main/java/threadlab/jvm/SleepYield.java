package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * threads.sleep_yield (seed 003's yield test, Table 4): {@code count}
 * threads, created before the measurement, each sleep {@code sleep_ms},
 * yield, sleep {@code sleep_ms}.  The measurement starts them all; with
 * {@code joined=no} (the seed) joining them is clean-up in the tear-down,
 * outside the measurement; with {@code joined=yes} the measurement ends
 * when the last one has been joined.
 */
@OutputTimeUnit(TimeUnit.SECONDS)
public class SleepYield extends ModelBenchmark {
    @Param({"100000"})
    public int count;

    @Param({"100"})
    public long sleep_ms;

    @Param({"no"})
    public String joined;

    private Thread[] threads;
    private boolean join;

    @Setup(Level.Trial)
    public void setup() {
        join = switch (joined) {
            case "yes" -> true;
            case "no" -> false;
            default -> throw new IllegalArgumentException("joined " + joined + ": expected yes or no");
        };
    }

    @Setup(Level.Iteration)
    public void create() {
        threads = Models.unstarted(builder, count, Models.sleepYieldSleep(sleep_ms));
    }

    @Benchmark
    public void run() throws InterruptedException {
        Models.startAll(threads);
        if (join) {
            for (Thread t : threads) {
                t.join();
            }
        }
    }

    @TearDown(Level.Iteration)
    public void release() throws InterruptedException {
        Models.joinAll(threads);
        threads = null;
    }
}
