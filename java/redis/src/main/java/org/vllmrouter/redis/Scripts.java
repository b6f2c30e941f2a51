package org.vllmrouter.redis;

import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The Lua scripts of the store (resources next to this class) and how they run: EVALSHA, and EVAL when the
 * server has forgotten the script (it was restarted or flushed its script cache).
 *
 * <p>A script's reply can be applied to a near cache by a callback that runs on the connection's I/O thread
 * before the caller sees the reply. Key invalidations arrive on that same thread in the order the server sent
 * them, so a reply is always applied before any invalidation of a later write, never after it: applying it from
 * the caller's thread could put back a binding that another router changed meanwhile.
 */
final class Scripts {
    private static final Logger LOG = Logger.getLogger(Scripts.class.getName());

    /** One script: its name (the resource {@code NAME.lua}), text (after the prelude) and SHA-1. */
    record Script(String name, String source, String sha) {
    }

    final Script route;
    final Script release;
    final Script expire;
    final Script adopt;
    final Script stats;
    private final StatefulConnection<String, String> connection;

    /**
     * On a Redis Cluster {@code connection} is the cluster's: it sends each script to the primary that owns the
     * slot of its first key (every key of a call shares one slot), on that primary's tracked connection.
     */
    Scripts(StatefulConnection<String, String> connection) {
        this.connection = connection;
        this.route = load("route");
        this.release = load("release");
        this.expire = load("expire");
        this.adopt = load("adopt");
        this.stats = load("stats");
    }

    /** The script {@code NAME.lua} after {@code prelude.lua}, the key type guard every script shares. */
    private Script load(String name) {
        String source = resource("prelude") + resource(name);
        return new Script(name, source, sha1(source));
    }

    private static String sha1(String source) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1")
                    .digest(source.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is part of every Java runtime", e);
        }
    }

    private static String resource(String name) {
        try (InputStream in = Scripts.class.getResourceAsStream(name + ".lua")) {
            if (in == null) {
                throw new IllegalStateException(name + ".lua is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + name + ".lua", e);
        }
    }

    /**
     * Runs {@code script}; {@code onReply} (may be null) sees the reply on the I/O thread first. The future fails
     * with the server's error, or with the connection's when the command could not be sent.
     */
    CompletableFuture<List<Object>> run(Script script, String[] keys, String[] args, Consumer<List<Object>> onReply) {
        return dispatch(CommandType.EVALSHA, script.sha(), keys, args, onReply, script.name())
                .exceptionallyCompose(failure -> unwrap(failure) instanceof RedisNoScriptException
                        ? dispatch(CommandType.EVAL, script.source(), keys, args, onReply, script.name())
                        : CompletableFuture.failedFuture(unwrap(failure)));
    }

    private CompletableFuture<List<Object>> dispatch(CommandType type, String scriptOrSha, String[] keys, String[] args,
                                                     Consumer<List<Object>> onReply, String name) {
        CommandArgs<String, String> commandArgs = new CommandArgs<>(StringCodec.UTF8)
                .add(scriptOrSha).add(keys.length).addKeys(keys).addValues(args);
        Command<String, String, List<Object>> command =
                new Command<>(type, new NestedMultiOutput<>(StringCodec.UTF8), commandArgs);
        AsyncCommand<String, String, List<Object>> async = new AsyncCommand<>(command) {
            @Override
            public void complete() {
                CommandOutput<String, String, List<Object>> output = getOutput();
                if (onReply != null && output != null && !output.hasError()) {
                    try {
                        onReply.accept(output.get());
                    } catch (RuntimeException e) {
                        LOG.log(Level.WARNING, "Session store: cannot apply the reply of " + name + ".lua", e);
                    }
                }
                super.complete();
            }
        };
        connection.dispatch(async);
        return async;
    }

    static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
