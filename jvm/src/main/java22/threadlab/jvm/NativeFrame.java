package threadlab.jvm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Runs a task inside a native frame: libc's qsort is called on two ints
 * with a comparator that is an upcall into Java, and the comparator runs
 * the task.  While the task runs, qsort's frame is on the thread's stack,
 * so a virtual thread that blocks in the task cannot unmount: it is pinned
 * to its carrier on every JDK (JEP 444; JEP 491 removed pinning for
 * synchronized, not for native frames).  JDK 22+ (Foreign Function API).
 */
final class NativeFrame {
    private NativeFrame() {}

    private static final MethodHandle QSORT;
    private static final MemorySegment COMPARATOR;
    private static final ThreadLocal<Runnable> TASK = new ThreadLocal<>();
    private static final ThreadLocal<Throwable> FAILURE = new ThreadLocal<>();

    static {
        try {
            Linker linker = Linker.nativeLinker();
            MemorySegment qsort = linker.defaultLookup().find("qsort").orElseThrow();
            QSORT = linker.downcallHandle(qsort, FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
            MethodHandle compare = MethodHandles.lookup().findStatic(NativeFrame.class, "compare",
                    MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class));
            COMPARATOR = linker.upcallStub(compare, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static boolean available() {
        return true;
    }

    static String unavailableReason() {
        return "";
    }

    /** The upcall: runs the pending task once.  An exception must not
     *  escape an upcall (the JVM would exit), so it is kept for run(). */
    private static int compare(MemorySegment a, MemorySegment b) {
        Runnable task = TASK.get();
        if (task != null) {
            TASK.remove();
            try {
                task.run();
            } catch (Throwable t) {
                FAILURE.set(t);
            }
        }
        return 0;
    }

    static void run(Runnable task) {
        TASK.set(task);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pair = arena.allocate(JAVA_INT, 2);
            QSORT.invokeExact(pair, 2L, 4L, COMPARATOR);
        } catch (Throwable t) {
            throw new IllegalStateException("threadlab: qsort downcall failed: " + t, t);
        }
        if (TASK.get() != null) {
            TASK.remove();
            throw new IllegalStateException("threadlab: check failed: qsort never called the comparator");
        }
        Throwable failure = FAILURE.get();
        if (failure != null) {
            FAILURE.remove();
            throw new IllegalStateException("threadlab: task failed inside the native frame: " + failure, failure);
        }
    }
}
