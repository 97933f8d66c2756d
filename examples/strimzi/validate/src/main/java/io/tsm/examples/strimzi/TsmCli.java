package io.tsm.examples.strimzi;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * {@code tsm config check} (crates/tsm-cli): the binary given (--tsm, $TSM_BIN), else the one
 * cargo builds from this repository ({@code cargo build --locked -p tsm-cli}, the path cargo
 * reports). It runs with {@code --skip-key-files} (the key files exist only in the pod) and
 * {@code --json}; exit 0 when every key is known and every value valid, 2 with one problem per
 * key otherwise (crates/tsm-cli/README.md). Anything else is a tool failure.
 */
final class TsmCli {
    /** The CLI could not be built or run: the message says why and what to do. */
    static final class Unavailable extends Exception {
        Unavailable(String message) {
            super(message);
        }
    }

    /** One problem tsm reports: the key as written in the file, and the message. */
    record Problem(String key, String message) {}

    /** The outcome of one check: the problems (empty: accepted) and the command line, to run it again. */
    record Outcome(List<Problem> problems, String command) {}

    private final List<String> command;

    private TsmCli(List<String> command) {
        this.command = command;
    }

    /** The CLI at {@code binary}, which must be an executable file. */
    static TsmCli binary(Path binary) throws Unavailable {
        if (!Files.isRegularFile(binary) || !Files.isExecutable(binary)) {
            throw new Unavailable("the tsm binary " + binary + " does not exist or is not executable");
        }
        return new TsmCli(List.of(binary.toString()));
    }

    /** Builds the CLI with cargo in {@code repoRoot} (quietly; minutes the first time). */
    static TsmCli build(Path repoRoot) throws Unavailable {
        List<String> cmd = List.of("cargo", "build", "--locked", "-q", "-p", "tsm-cli", "--message-format=json-render-diagnostics");
        Run r;
        try {
            r = run(cmd, repoRoot);
        } catch (IOException e) {
            throw new Unavailable("cannot run cargo (" + e.getMessage() + "): install a Rust toolchain (rustup.rs), or give a "
                    + "built tsm binary with --tsm PATH or TSM_BIN=PATH");
        }
        if (r.exit != 0) {
            throw new Unavailable("the tsm CLI could not be built (`cargo build --locked -p tsm-cli` in " + repoRoot
                    + " exited " + r.exit + "):\n" + tail(r.stderr, 30));
        }
        ObjectMapper json = new ObjectMapper();
        for (String line : r.stdout.split("\n")) {
            if (!line.startsWith("{")) {
                continue;
            }
            try {
                JsonNode n = json.readTree(line);
                if ("compiler-artifact".equals(n.path("reason").asText()) && "tsm".equals(n.path("target").path("name").asText())
                        && n.hasNonNull("executable")) {
                    return binary(Path.of(n.get("executable").asText()));
                }
            } catch (IOException e) {
                // not a JSON message: skip
            }
        }
        throw new Unavailable("cargo built tsm-cli but reported no tsm executable; give one with --tsm PATH");
    }

    /** The binary this runs. */
    Path binaryPath() {
        return Path.of(command.get(0));
    }

    /** {@code tsm config check --skip-key-files --json FILE}. */
    Outcome check(Path file) throws Unavailable {
        List<String> cmd = new ArrayList<>(command);
        cmd.addAll(List.of("config", "check", "--skip-key-files", "--json", file.toString()));
        String shown = String.join(" ", command) + " config check --skip-key-files " + file;
        Run r;
        try {
            r = run(cmd, null);
        } catch (IOException e) {
            throw new Unavailable("cannot run " + shown + ": " + e.getMessage());
        }
        if (r.exit != 0 && r.exit != 2) {
            throw new Unavailable(shown + " exited " + r.exit + ":\n" + tail(r.stderr, 20));
        }
        JsonNode n;
        try {
            n = new ObjectMapper().readTree(r.stdout);
        } catch (IOException e) {
            n = null;
        }
        if (n == null || !n.path("problems").isArray()) {
            throw new Unavailable(shown + " exited " + r.exit + " without its JSON report (is it tsm's CLI?):\n"
                    + tail(r.stderr, 20));
        }
        List<Problem> problems = new ArrayList<>();
        for (JsonNode p : n.path("problems")) {
            problems.add(new Problem(p.path("key").asText(), p.path("message").asText()));
        }
        if (r.exit == 2 && problems.isEmpty()) {
            throw new Unavailable(shown + " exited 2 and reported no problem:\n" + tail(r.stderr, 20));
        }
        return new Outcome(problems, shown);
    }

    private record Run(int exit, String stdout, String stderr) {}

    private static Run run(List<String> cmd, Path dir) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(cmd);
        if (dir != null) {
            pb.directory(dir.toFile());
        }
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
        String out = read(p.getInputStream());
        try {
            return new Run(p.waitFor(), out, err.join());
        } catch (InterruptedException e) {
            p.destroy();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    private static String read(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    private static String tail(String s, int lines) {
        List<String> all = s.strip().lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }
}
