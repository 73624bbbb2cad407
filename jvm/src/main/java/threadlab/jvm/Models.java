package threadlab.jvm;

/**
 * The two thread models of the JVM suite and what every benchmark shares:
 * the thread builder of a model, an empty task, starting and joining arrays
 * of threads with failures that say how far they got.
 */
final class Models {
    private Models() {}

    /** The task of threads that end at once. */
    static final Runnable NOOP = () -> {};

    /** "platform" (an OS thread each) or "virtual" (JEP 444, mounted on carrier threads). */
    static Thread.Builder builder(String model) {
        return switch (model) {
            case "platform" -> Thread.ofPlatform();
            case "virtual" -> Thread.ofVirtual();
            default -> throw new IllegalArgumentException("model " + model + ": expected platform or virtual");
        };
    }

    /** count unstarted threads running task. */
    static Thread[] unstarted(Thread.Builder builder, int count, Runnable task) {
        Thread[] threads = new Thread[count];
        for (int i = 0; i < count; i++) {
            threads[i] = builder.unstarted(task);
        }
        return threads;
    }

    /** Starts threads[0..]; on a failure (typically OutOfMemoryError "unable
     *  to create native thread") joins the threads already started, so the
     *  JVM can exit, and throws an exception naming the thread that failed. */
    static void startAll(Thread[] threads) {
        startAll(threads, NOOP);
    }

    /** startAll for threads that wait for their caller: release runs, on a
     *  failure, before the threads already started are joined (joining them
     *  first would wait for ever). */
    static void startAll(Thread[] threads, Runnable release) {
        int i = 0;
        try {
            for (; i < threads.length; i++) {
                threads[i].start();
            }
        } catch (Throwable failure) {
            release.run();
            throw startFailure(threads, i, failure);
        }
    }

    /** Creates and starts threads[i] = builder.start(task), with the same
     *  failure handling as startAll. */
    static void startNew(Thread.Builder builder, Thread[] threads, Runnable task) {
        int i = 0;
        try {
            for (; i < threads.length; i++) {
                threads[i] = builder.start(task);
            }
        } catch (Throwable failure) {
            throw startFailure(threads, i, failure);
        }
    }

    static IllegalStateException startFailure(Thread[] threads, int index, Throwable failure) {
        int started = index;
        for (int j = 0; j < index; j++) {
            Thread t = threads[j];
            if (t != null && t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException ignored) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        // One line the launcher (threadlab.producers.jmh) looks for.
        return new IllegalStateException(
                "threadlab: could not start thread " + (started + 1) + " of " + threads.length + ": " + failure, failure);
    }

    /** Joins every non-null thread. */
    static void joinAll(Thread[] threads) throws InterruptedException {
        if (threads == null) {
            return;
        }
        for (Thread t : threads) {
            if (t != null) {
                t.join();
            }
        }
    }

    /** A body that sleeps, yields, sleeps (the seed's yield test). */
    static Runnable sleepYieldSleep(long sleepMs) {
        return () -> {
            try {
                Thread.sleep(sleepMs);
                Thread.yield();
                Thread.sleep(sleepMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }
}
