package threadlab.jvm;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
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
 * per-thread structures).  Kernel memory is in neither, so it is reported
 * beside them: the delta of KernelStack + PageTables in /proc/meminfo
 * (a platform thread's kernel stack and page tables), read at the same two
 * moments.  It is machine-wide, so other processes add noise; the kernel's
 * slab objects (task_struct) are not in it, as cached slab pages cannot be
 * attributed.
 *
 * Usage: Capacity MODEL COUNT WARMUP ITERATIONS.  Prints one line per
 * measured repetition: "sample BYTES_PER_THREAD RSS_DELTA HEAP_DELTA
 * COMMITTED_DELTA KERNEL_DELTA", KERNEL_DELTA in bytes or "-" when
 * /proc/meminfo lacks KernelStack or PageTables; failures as
 * "threadlab: ..." on stderr, exit status 1.
 */
public final class Capacity {
    private Capacity() {}

    /** The "Name: N kB" lines of a /proc file, in bytes, by name. */
    private static Map<String, Long> kilobyteFields(Path file) throws IOException {
        Map<String, Long> fields = new HashMap<>();
        for (String line : Files.readAllLines(file)) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 3 && parts[0].endsWith(":") && parts[2].equals("kB")) {
                fields.put(parts[0].substring(0, parts[0].length() - 1), Long.parseLong(parts[1]) * 1024L);
            }
        }
        return fields;
    }

    private static long residentBytes() throws IOException {
        Long rss = kilobyteFields(Path.of("/proc/self/status")).get("VmRSS");
        if (rss == null) {
            throw new IOException("no VmRSS in /proc/self/status");
        }
        return rss;
    }

    /** KernelStack + PageTables, or null when /proc/meminfo does not say: an unknown is never reported as 0. */
    private static Long kernelBytes() {
        Map<String, Long> meminfo;
        try {
            meminfo = kilobyteFields(Path.of("/proc/meminfo"));
        } catch (IOException | NumberFormatException unreadable) {
            return null;
        }
        Long stacks = meminfo.get("KernelStack");
        Long tables = meminfo.get("PageTables");
        return stacks == null || tables == null ? null : stacks + tables;
    }

    /** The kernel tasks of this process now ("Threads:" in /proc/self/status). */
    private static int osThreads() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Threads:")) {
                return Integer.parseInt(line.substring("Threads:".length()).trim());
            }
        }
        throw new IOException("no Threads in /proc/self/status");
    }

    /**
     * Waits until the kernel tasks of the repetition just joined are gone.
     * Thread.join returns when the Java thread has terminated, before its
     * native thread has left the kernel: thousands of them can still hold
     * their kernel stacks and native stacks when the next repetition's
     * "before" is read, which would hide their memory from both deltas.
     * The slack allows for the JVM's own threads that come and go (compiler
     * threads) and the virtual threads' carriers.
     */
    private static void awaitThreadsGone(int baseline) throws IOException, InterruptedException {
        int slack = Runtime.getRuntime().availableProcessors() + 16;
        long deadline = System.nanoTime() + 120_000_000_000L;
        int now;
        while ((now = osThreads()) > baseline + slack) {
            if (System.nanoTime() > deadline) {
                throw new IOException("the threads of a repetition did not leave the kernel within 120 s ("
                        + now + " tasks, " + baseline + " before it)");
            }
            Thread.sleep(10);
        }
    }

    private record Snapshot(long rss, long heapUsed, long heapCommitted, Long kernel) {}

    private static Snapshot snapshot(MemoryMXBean memory) throws IOException, InterruptedException {
        System.gc();
        Thread.sleep(50);
        var heap = memory.getHeapMemoryUsage();
        return new Snapshot(residentBytes(), heap.getUsed(), heap.getCommitted(), kernelBytes());
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
            int baseline = osThreads();
            Snapshot before = snapshot(memory);
            try {
                Models.startAll(threads, release::countDown);
            } catch (IllegalStateException failure) { // the threads it started are released and joined
                System.err.println(failure.getMessage());
                System.exit(1);
            }
            blocked.await();
            Snapshot during = snapshot(memory);
            release.countDown();
            Models.joinAll(threads);
            try {
                awaitThreadsGone(baseline);
            } catch (IOException stuck) {
                System.err.println("threadlab: " + stuck.getMessage());
                System.exit(1);
            }
            long rssDelta = during.rss() - before.rss();
            long heapDelta = during.heapUsed() - before.heapUsed();
            long committedDelta = during.heapCommitted() - before.heapCommitted();
            double perThread = (heapDelta + Math.max(0L, rssDelta - committedDelta)) / (double) count;
            String kernelDelta = before.kernel() == null || during.kernel() == null
                    ? "-" : Long.toString(during.kernel() - before.kernel());
            if (rep >= warmup) {
                System.out.println("sample " + perThread + " " + rssDelta + " " + heapDelta + " " + committedDelta
                        + " " + kernelDelta);
            }
        }
    }
}
