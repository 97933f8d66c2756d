package io.tsm.examples.strimzi;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Strimzi YAML snippets of the docs: every fenced {@code ```yaml} block of the files in
 * {@link #FILES}. A block is either complete resources (apiVersion, kind, metadata) or a
 * fragment whose first line says where it belongs, {@code # fragment of <Kind> at <path>}
 * (e.g. {@code # fragment of Kafka at spec.kafka.tieredStorage}); either way it is read
 * strictly ({@link StrictYaml}), so a snippet with a misspelt field fails like a manifest.
 */
final class DocSnippets {
    private DocSnippets() {}

    /** The docs whose YAML blocks are Strimzi resources. */
    static final List<String> FILES = List.of("README.md", "docs/strimzi.md", "docs/tiering-a-backfilled-topic.md");

    /** A fenced yaml block, also indented (inside a list item): group 1 the indent, 2 the body. */
    private static final Pattern FENCE = Pattern.compile("(?m)^([ \\t]*)```yaml[ \\t]*\\n(.*?)^\\1```[ \\t]*$", Pattern.DOTALL);
    private static final Pattern FRAGMENT = Pattern.compile("^#\\s*fragment of (\\w+) at ([\\w.]+)\\s*$");

    /** One block: its file, the line of its first content line, its text. */
    record Snippet(String file, int line, String text) {}

    static List<Snippet> snippets(String file) {
        String md = Repo.read(file);
        List<Snippet> out = new ArrayList<>();
        Matcher m = FENCE.matcher(md);
        while (m.find()) {
            int line = 1 + (int) md.substring(0, m.start(2)).chars().filter(c -> c == '\n').count();
            String indent = m.group(1);
            StringBuilder body = new StringBuilder();
            for (String l : m.group(2).split("\n", -1)) {
                body.append(l.startsWith(indent) ? l.substring(indent.length()) : l).append('\n');
            }
            out.add(new Snippet(file, line, body.toString()));
        }
        return out;
    }

    /** The documents of {@code s}: its resources, or the one resource its fragment is part of. */
    static List<StrictYaml.Doc> parse(Snippet s) {
        String first = s.text().lines().findFirst().orElse("").strip();
        Matcher f = FRAGMENT.matcher(first);
        if (f.matches()) {
            String kind = StrictYaml.KINDS.keySet().stream().filter(k -> k.endsWith(" " + f.group(1))).findFirst()
                    .orElseThrow(() -> new AssertionError(s.file() + " line " + s.line() + ": unknown kind " + f.group(1)));
            return List.of(StrictYaml.parseFragment(s.file(), s.line(), s.text(), kind, f.group(2)));
        }
        return StrictYaml.parse(s.file() + " (yaml block)", s.text(), s.line());
    }
}
