package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;
import org.openjdk.jmh.infra.Blackhole;

/**
 * threads.instantiate (seed 003, Table 1): create {@code count} thread
 * objects without starting them, each consumed by a Blackhole so the
 * allocation cannot be eliminated.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 30)
@Fork(1)
public class Instantiate {
    @Param({"platform"})
    public String model;

    @Param({"100000"})
    public int count;

    private Thread.Builder builder;

    @Setup(Level.Trial)
    public void setup() {
        builder = Models.builder(model);
    }

    @Benchmark
    public void run(Blackhole bh) {
        Thread.Builder b = builder;
        for (int i = 0; i < count; i++) {
            bh.consume(b.unstarted(Models.NOOP));
        }
    }
}
