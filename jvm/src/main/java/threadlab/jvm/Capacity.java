package threadlab.jvm;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * threads.capacity: memory per suspended thread.  Not a timing, so not a
 * JMH benchmark: a plain main in the same jar, run by the launcher in a
 * fresh JVM.
 *
 * Each repetition starts {@code count} threads of the model that block on a
 * latch, waits until every one is blocked, and compares with the moment
 * before:
 *
 *   per thread = (heap used after a full GC, delta)
 *              + (resident set outside the committed heap, delta)
 *
 * all divided by count.  The first term is where a virtual thread lives
 * (its Thread object and its stack chunks are heap objects); the second is
 * where a platform thread lives (its native stack pages and the JVM's
 * per-thread structures).  Kernel memory (a platform thread's kernel stack
 * and task_struct) is in neither and not counted.
 *
 * Usage: Capacity MODEL COUNT WARMUP ITERATIONS.  Prints one line per
 * measured repetition: "sample BYTES_PER_THREAD RSS_DELTA HEAP_DELTA
 * COMMITTED_DELTA"; failures as "threadlab: ..." on stderr, exit status 1.
 */
public final class Capacity {
    private Capacity() {}

    private static long residentBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                String[] parts = line.trim().split("\\s+");
                return Long.parseLong(parts[1]) * 1024L;
            }
        }
        throw new IOException("no VmRSS in /proc/self/status");
    }

    private record Snapshot(long rss, long heapUsed, long heapCommitted) {}

    private static Snapshot snapshot(MemoryMXBean memory) throws IOException, InterruptedException {
        System.gc();
        Thread.sleep(50);
        var heap = memory.getHeapMemoryUsage();
        return new Snapshot(residentBytes(), heap.getUsed(), heap.getCommitted());
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("threadlab: usage: Capacity MODEL COUNT WARMUP ITERATIONS");
            System.exit(2);
        }
        Thread.Builder builder = Models.builder(args[0]);
        int count = Integer.parseInt(args[1]);
        int warmup = Integer.parseInt(args[2]);
        int iterations = Integer.parseInt(args[3]);
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        for (int rep = 0; rep < warmup + iterations; rep++) {
            CountDownLatch blocked = new CountDownLatch(count);
            CountDownLatch release = new CountDownLatch(1);
            Runnable body = () -> {
                blocked.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            Thread[] threads = Models.unstarted(builder, count, body);
            Snapshot before = snapshot(memory);
            try {
                Models.startAll(threads);
            } catch (IllegalStateException failure) {
                release.countDown();
                Models.joinAll(threads);
                System.err.println(failure.getMessage());
                System.exit(1);
            }
            blocked.await();
            Snapshot during = snapshot(memory);
            release.countDown();
            Models.joinAll(threads);
            long rssDelta = during.rss() - before.rss();
            long heapDelta = during.heapUsed() - before.heapUsed();
            long committedDelta = during.heapCommitted() - before.heapCommitted();
            double perThread = (heapDelta + Math.max(0L, rssDelta - committedDelta)) / (double) count;
            if (rep >= warmup) {
                System.out.println("sample " + perThread + " " + rssDelta + " " + heapDelta + " " + committedDelta);
            }
        }
    }
}
