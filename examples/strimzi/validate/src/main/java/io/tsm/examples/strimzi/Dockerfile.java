package io.tsm.examples.strimzi;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The instructions of a Dockerfile that the checks need: {@code FROM}, {@code ARG}s (with or
 * without a default) and {@code COPY} (sources and destination, with {@code ${ARG}} expanded
 * from the build arguments given, else the ARG's default). Line continuations and comments
 * are handled; flags ({@code --chown=...}) are kept apart.
 */
final class Dockerfile {
    /** One COPY: its flags, sources (context-relative) and destination. */
    record Copy(List<String> flags, List<String> sources, String destination) {}

    final String from;
    /** Each ARG's value: the build argument given, else its default, else null (no default). */
    final Map<String, String> args = new HashMap<>();
    /** The ARGs declared without a default (they must be given with --build-arg). */
    final List<String> argsWithoutDefault = new ArrayList<>();
    private final Map<String, String> buildArgs;
    final List<Copy> copies = new ArrayList<>();

    private static final Pattern VAR = Pattern.compile("\\$\\{(\\w+)}|\\$(\\w+)");

    Dockerfile(String text) {
        this(text, Map.of());
    }

    /** {@code buildArgs}: what {@code docker build --build-arg NAME=VALUE} would give. */
    Dockerfile(String text, Map<String, String> buildArgs) {
        this.buildArgs = buildArgs;
        String base = null;
        StringBuilder logical = new StringBuilder();
        List<String> lines = new ArrayList<>();
        for (String raw : text.split("\n", -1)) {
            String l = raw.strip();
            if (logical.length() == 0 && (l.isEmpty() || l.startsWith("#"))) {
                continue;
            }
            if (l.startsWith("#")) {
                continue;
            }
            if (l.endsWith("\\")) {
                logical.append(l, 0, l.length() - 1).append(' ');
                continue;
            }
            logical.append(l);
            lines.add(logical.toString().strip());
            logical.setLength(0);
        }
        for (String l : lines) {
            String[] words = l.split("\\s+");
            String op = words[0].toUpperCase();
            switch (op) {
                case "FROM" -> {
                    if (base != null) {
                        throw new AssertionError("the Dockerfile has more than one FROM (multi-stage is not expected here)");
                    }
                    base = expand(lastNonFlag(words));
                }
                case "ARG" -> {
                    String[] kv = words[1].split("=", 2);
                    if (kv.length < 2) {
                        argsWithoutDefault.add(kv[0]);
                    }
                    args.put(kv[0], buildArgs.containsKey(kv[0]) ? buildArgs.get(kv[0]) : kv.length == 2 ? kv[1] : null);
                }
                case "COPY", "ADD" -> {
                    List<String> flags = new ArrayList<>();
                    List<String> paths = new ArrayList<>();
                    for (int i = 1; i < words.length; i++) {
                        if (words[i].startsWith("--")) {
                            flags.add(words[i]);
                        } else {
                            paths.add(expand(words[i]));
                        }
                    }
                    if (op.equals("ADD")) {
                        throw new AssertionError("use COPY, not ADD: " + l);
                    }
                    if (paths.size() < 2) {
                        throw new AssertionError("COPY needs sources and a destination: " + l);
                    }
                    copies.add(new Copy(flags, paths.subList(0, paths.size() - 1), paths.get(paths.size() - 1)));
                }
                default -> { }
            }
        }
        if (base == null) {
            throw new AssertionError("the Dockerfile has no FROM");
        }
        this.from = base;
    }

    private static String lastNonFlag(String[] words) {
        for (int i = words.length - 1; i > 0; i--) {
            if (!words[i].startsWith("--") && !words[i].equalsIgnoreCase("AS")) {
                return words[i];
            }
        }
        throw new AssertionError("FROM without an image");
    }

    /** {@code s} with {@code ${NAME}} / {@code $NAME} replaced by the ARG values seen so far. */
    String expand(String s) {
        Matcher m = VAR.matcher(s);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            String name = m.group(1) != null ? m.group(1) : m.group(2);
            if (!args.containsKey(name)) {
                throw new AssertionError("the Dockerfile uses ${" + name + "} before an ARG " + name);
            }
            String v = args.get(name);
            if (v == null) {
                throw new AssertionError("the Dockerfile uses ${" + name + "}, an ARG without a default: give it as a build argument");
            }
            m.appendReplacement(b, Matcher.quoteReplacement(v));
        }
        m.appendTail(b);
        return b.toString();
    }
}
