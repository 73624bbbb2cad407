package threadlab.jvm;

/**
 * Runs a task inside a native frame, which pins a virtual thread to its
 * carrier while the task blocks.  This base version is for JDK 21, which
 * lacks the final Foreign Function API; the JDK 22+ version lives in
 * src/main/java22 (META-INF/versions/22 of the multi-release jar).
 */
final class NativeFrame {
    private NativeFrame() {}

    static boolean available() {
        return false;
    }

    static String unavailableReason() {
        return "pinned=yes needs the Foreign Function API (JDK 22 or newer) to put a native frame on the stack; "
                + "on JDK 21 a virtual thread blocked in synchronized is pinned anyway (compare lock=synchronized)";
    }

    static void run(Runnable task) {
        throw new UnsupportedOperationException(unavailableReason());
    }
}
