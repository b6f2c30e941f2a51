package org.vllmrouter.host;

import java.nio.file.Path;

/**
 * How to start another JVM like this one: the same Java and class path. Used for the flag
 * parser's JVM, and from Python under {@code vllm-router python} (the {@code vllm_router}
 * package starts its mock workers with them, since the distribution has no engine jar).
 */
public final class HostJvm {

    private HostJvm() {}

    /** The {@code java} executable running this JVM. */
    public static String javaExecutable() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** This JVM's class path. */
    public static String classPath() {
        return System.getProperty("java.class.path");
    }
}
