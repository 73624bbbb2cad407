package threadlab.jvm;

import org.openjdk.jmh.annotations.*;

/**
 * What every benchmark of the JVM suite shares: JMH's single-shot method as
 * de Souto's study of Java threads ran it (one warm-up and 30 measured
 * iterations in one fork; the launcher sets the counts on the command
 * line), the model under test ({@code platform} or {@code virtual}
 * threads) and that model's thread builder.  Each benchmark states its
 * output unit and its own parameters.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@Warmup(iterations = 1)
@Measurement(iterations = 30)
@Fork(1)
public abstract class ModelBenchmark {
    @Param({"platform"})
    public String model;

    /** The model's thread builder (Models.builder), made once per trial. */
    protected Thread.Builder builder;

    @Setup(Level.Trial)
    public void createBuilder() {
        builder = Models.builder(model);
    }
}
