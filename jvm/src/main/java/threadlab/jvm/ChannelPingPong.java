package threadlab.jvm;

import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * threads.channel_pingpong: two threads of the model pass a sequence number
 * back and forth through two SynchronousQueues (the JVM's rendezvous
 * channel), {@code handoffs} one-way handoffs per measurement (the launcher
 * divides).  Every received number is checked.
 */
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ChannelPingPong extends ModelBenchmark {
    @Param({"20000"})
    public int handoffs;

    private SynchronousQueue<Integer> there;
    private SynchronousQueue<Integer> back;
    private Thread ping;
    private Thread pong;
    private volatile String failure;

    @Setup(Level.Trial)
    public void setup() {
        if (handoffs < 2 || handoffs % 2 != 0) {
            throw new IllegalArgumentException("handoffs " + handoffs + ": expected an even number >= 2");
        }
    }

    @Setup(Level.Iteration)
    public void create() {
        there = new SynchronousQueue<>();
        back = new SynchronousQueue<>();
        failure = null;
        final int rounds = handoffs / 2;
        ping = builder.unstarted(() -> {
            try {
                for (int i = 0; i < rounds; i++) {
                    there.put(i);
                    int answer = back.take();
                    if (answer != i + 1) {
                        failure = "ping expected " + (i + 1) + ", received " + answer;
                        return;
                    }
                }
            } catch (InterruptedException e) {
                failure = "ping interrupted";
            }
        });
        pong = builder.unstarted(() -> {
            try {
                for (int i = 0; i < rounds; i++) {
                    int value = there.take();
                    if (value != i) {
                        failure = "pong expected " + i + ", received " + value;
                        return;
                    }
                    back.put(value + 1);
                }
            } catch (InterruptedException e) {
                failure = "pong interrupted";
            }
        });
    }

    @Benchmark
    public void run() throws InterruptedException {
        ping.start();
        pong.start();
        ping.join();
        pong.join();
        if (failure != null) {
            throw new IllegalStateException("threadlab: check failed: " + failure);
        }
    }
}
