package org.vllmrouter.host;

import java.io.OutputStream;
import java.util.List;
import java.util.Objects;

import org.graalvm.polyglot.Context;
import org.graalvm.polyglot.Engine;
import org.graalvm.polyglot.PolyglotException;
import org.graalvm.polyglot.Value;
import org.graalvm.polyglot.proxy.ProxyArray;
import org.graalvm.python.embedding.GraalPyResources;
import org.graalvm.python.embedding.VirtualFileSystem;

/**
 * Runs {@code vllm_router/router_args.py} (packed into this jar's GraalPy virtual filesystem)
 * on an argv, exactly as {@code python -m vllm_router.launch_router} would, and hands back the
 * RouterConfig JSON.
 *
 * <p>Only {@code launch}, {@code print-config} and {@code python} reach this class: it,
 * {@link PythonProgram} and {@link PythonDicts} are the places that name GraalPy types, so the
 * {@code serve} path and the engine jar never load them.
 */
public final class GraalPyRouterArgs implements AutoCloseable {

    /**
     * One Truffle engine per JVM: contexts created on it share parsed Python code, so a second
     * context (a test, the in-process bridge) starts faster than the first.
     */
    private static final class SharedEngine {
        static final Engine ENGINE = Engine.newBuilder("python")
                // A stock JDK has no Graal JIT; GraalPy interprets, which is right for a parse.
                .option("engine.WarnInterpreterOnly", "false")
                .build();
    }

    /** Where Python sees the jar's virtual filesystem. */
    private static final String VFS_MOUNT_POINT = "/graalpy_vfs";

    /** The sys.path entry of the packaged {@code vllm_router} ({@code src/} of the virtual filesystem, by GraalPy's convention). */
    static final String PACKAGED_SOURCES = VFS_MOUNT_POINT + "/src";

    private final Context context;
    private final Value configJsonFromArgv;
    private final Value pythonStr;

    private GraalPyRouterArgs(Context context) {
        this.context = context;
        this.configJsonFromArgv = context.eval("python", "import vllm_router.engine_config as engine_config\nengine_config")
                .getMember("config_json_from_argv");
        this.pythonStr = context.eval("python", "str");
    }

    /** A context whose Python stdout/stderr are {@link System#out} and {@link System#err} as they are now. */
    public static GraalPyRouterArgs open() {
        return new GraalPyRouterArgs(newContext(System.out, System.err));
    }

    /**
     * A GraalPy context on the shared engine that can import {@code vllm_router} from the jar and
     * reach the router's Java classes through {@code java.type(...)} (the in-process bridge).
     */
    public static Context newContext(OutputStream out, OutputStream err) {
        return contextBuilder(out, err).build();
    }

    /** The builder of {@link #newContext}, for callers that set more options ({@code vllm-router python}). */
    static Context.Builder contextBuilder(OutputStream out, OutputStream err) {
        VirtualFileSystem packaged = VirtualFileSystem.newBuilder().unixMountPoint(VFS_MOUNT_POINT).build();
        return GraalPyResources.contextBuilder(packaged)
                .engine(sharedEngine())
                .allowHostClassLookup(GraalPyRouterArgs::isRouterClass)
                .out(Objects.requireNonNull(out))
                .err(Objects.requireNonNull(err));
    }

    /** The Truffle engine every GraalPy context of this JVM runs on. */
    static Engine sharedEngine() {
        return SharedEngine.ENGINE;
    }

    /** The host classes Python may look up ({@code java.type(...)}): the router's own. */
    static boolean isRouterClass(String className) {
        return className.startsWith("org.vllmrouter.");
    }

    /**
     * The configuration {@code python -m vllm_router.launch_router ARGV} would hand the engine
     * ({@code vllm_router.engine_config.config_json_from_argv}).
     *
     * @throws ArgvRejected when argparse exits (bad flag, {@code --help}) or the arguments are
     *     invalid; argparse has already written its usage and message to stderr by then
     */
    public String configJson(List<String> argv) throws ArgvRejected {
        try {
            return configJsonFromArgv.execute(ProxyArray.fromList(List.<Object>copyOf(argv))).asString();
        } catch (PolyglotException e) {
            Value exception = e.isGuestException() && !e.isInternalError() ? e.getGuestObject() : null;
            if (exception != null && exception.getMetaObject().getMetaSimpleName().equals("SystemExit")) {
                // Read the status from the SystemExit itself: GraalPy 25.0 reports
                // getExitStatus() == 1 for argparse's SystemExit(2).
                throw systemExit(exception.getMember("code"));
            }
            if (e.isExit()) {
                throw new ArgvRejected(e.getExitStatus(), null);
            }
            if (exception == null) {
                throw e;
            }
            // As CPython's `python -m` would end: the exception's message, status 1.
            throw new ArgvRejected(1, pythonStr.execute(exception).asString());
        }
    }

    /** {@code SystemExit(code)} as the interpreter ends: None is 0, an int is the status, else print it and 1. */
    private ArgvRejected systemExit(Value code) {
        if (code.isNull()) {
            return new ArgvRejected(0, null);
        }
        if (code.fitsInInt()) {
            return new ArgvRejected(code.asInt(), null);
        }
        return new ArgvRejected(1, pythonStr.execute(code).asString());
    }

    /** The context, for callers that run more Python in it (the parity test, the bridge test). */
    public Context context() {
        return context;
    }

    @Override
    public void close() {
        context.close();
    }

    /**
     * The argv did not produce a configuration.
     *
     * @param exitCode what {@code python -m vllm_router.launch_router} exits with: argparse's
     *     status (2 for a usage error, 0 for {@code --help}) or 1 for an invalid value
     * @param message the error for the user, or null when argparse already printed it
     */
    public static final class ArgvRejected extends Exception {
        private static final long serialVersionUID = 1L;
        private final int exitCode;

        ArgvRejected(int exitCode, String message) {
            super(message);
            this.exitCode = exitCode;
        }

        public int exitCode() {
            return exitCode;
        }
    }
}
