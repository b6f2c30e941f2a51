package org.vllmrouter.host;

import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Work the {@code python} command's main thread would do later, started on daemon threads as the
 * command begins so that it runs on the second core while the main thread builds GraalPy's context.
 * Every run's GraalPy start makes the JVM's platform MBean server (its {@code PythonUtils} class
 * initialiser) and loads classes from the signed BouncyCastle jars, whose signatures the JVM
 * verifies on the first class it loads from each. (Not the engine's classes: they are initialised
 * only by a program that launches a router, and warming them did not make the first routed request
 * sooner; see docs/perf/startup.md.)
 *
 * <p>Each piece is idempotent JVM-wide state the main thread would create the same way: the MBean
 * server is a singleton, class loading and initialisation happen once whichever thread asks first
 * (the other waits for it), and nothing here is visible to the Python program. A failure changes
 * nothing either: the main thread then meets the same work, or the same error, where it always did;
 * here it is only logged at debug level.
 */
final class PythonStartWarmUp {

    /** One class from each signed jar GraalPy loads from (the verification is per jar). */
    private static final List<String> SIGNED_JAR_CLASSES = List.of(
            "org.bouncycastle.jce.provider.BouncyCastleProvider",
            "org.bouncycastle.operator.OperatorCreationException");

    private PythonStartWarmUp() {}

    /**
     * Starts the warm-up; returns at once. Call after {@code EngineLogging.useOneLineFormat()}: the
     * classes initialised here may create loggers.
     */
    static void start() {
        // Two threads: the signature check and the MBean server are each needed early, and
        // one would otherwise wait behind the other.
        daemon("vllm-router-warm-up-jars", PythonStartWarmUp::loadSignedJars);
        daemon("vllm-router-warm-up-mbeans", ManagementFactory::getPlatformMBeanServer);
    }

    private static void daemon(String name, Runnable work) {
        Thread thread = new Thread(() -> {
            try {
                work.run();
            } catch (RuntimeException | LinkageError e) {
                // Looked up here: a logger made as the command starts would set up logging on the main thread.
                Logger.getLogger(PythonStartWarmUp.class.getName()).log(Level.FINE,
                        "Start-up warm-up step failed; the main thread does it where it always did", e);
            }
        }, name);
        thread.setDaemon(true);
        thread.start();
    }

    private static void loadSignedJars() {
        ClassLoader loader = PythonStartWarmUp.class.getClassLoader();
        for (String name : SIGNED_JAR_CLASSES) {
            try {
                Class.forName(name, false, loader);
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
