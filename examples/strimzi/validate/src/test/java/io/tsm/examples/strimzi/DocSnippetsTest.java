package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * Every Strimzi YAML snippet of the docs reads strictly (a complete resource, or a fragment
 * placed where its header says) and uses the v1 API; a misspelt field in a fragment fails.
 */
class DocSnippetsTest {

    @Test
    void everySnippetReadsStrictly() {
        List<String> problems = new ArrayList<>();
        int blocks = 0;
        for (String file : DocSnippets.FILES) {
            for (DocSnippets.Snippet s : DocSnippets.snippets(file)) {
                blocks++;
                for (StrictYaml.Doc d : DocSnippets.parse(s)) {
                    if (!d.name().equals("fragment")) {
                        problems.addAll(V1Api.problems(d));
                    }
                }
            }
        }
        assertEquals(List.of(), problems);
        assertTrue(DocSnippets.snippets("docs/strimzi.md").size() >= 3, "docs/strimzi.md has its snippets");
        assertTrue(blocks >= 3, "yaml blocks found: " + blocks);
    }

    @Test
    void aMisspeltFieldInAFragmentFails() {
        DocSnippets.Snippet bad = new DocSnippets.Snippet("test", 1,
                "# fragment of Kafka at spec.kafka.tieredStorage\ntype: custom\nremoteStorageManager:\n  className: x\n  clasPath: /opt/x/*\n");
        AssertionError e = assertThrows(AssertionError.class, () -> DocSnippets.parse(bad));
        assertTrue(e.getMessage().contains("unknown field 'clasPath' at spec.kafka.tieredStorage.remoteStorageManager"), e.getMessage());
    }
}
