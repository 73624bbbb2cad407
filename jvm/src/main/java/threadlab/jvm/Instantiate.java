package threadlab.jvm;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;
import org.openjdk.jmh.infra.Blackhole;

/**
 * threads.instantiate (seed 003, Table 1): create {@code count} thread
 * objects without starting them, each consumed by a Blackhole so the
 * allocation cannot be eliminated.
 */
@OutputTimeUnit(TimeUnit.SECONDS)
public class Instantiate extends ModelBenchmark {
    @Param({"100000"})
    public int count;


    @Benchmark
    public void run(Blackhole bh) {
        Thread.Builder b = builder;
        for (int i = 0; i < count; i++) {
            bh.consume(b.unstarted(Models.NOOP));
        }
    }
}
