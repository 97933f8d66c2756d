package io.tsm.examples.strimzi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.deser.BeanDeserializerBuilder;
import com.fasterxml.jackson.databind.deser.BeanDeserializerModifier;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Secret;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.topic.KafkaTopic;

/**
 * Reads Kubernetes manifests (YAML, one or more documents) into Strimzi's API model
 * ({@code io.strimzi:api}, whose classes are the {@code v1beta2} API) and fabric8's
 * Kubernetes model, strictly: a field the model does not have fails, naming the file, the
 * document, the line and the field's path.
 *
 * <p>Strict means: every model class's any-setter (Strimzi's {@code UnknownPropertyPreserving}
 * and fabric8's {@code additionalProperties}, which would keep an unknown field silently) is
 * removed and unknown properties fail; duplicate keys fail; no scalar coercion (a number
 * where the API wants a string, like an env {@code value: 2}, fails, as the API server would
 * reject it; so does a string where it wants a number).
 *
 * <p>Documents must be {@code kafka.strimzi.io/v1} (Kafka, KafkaNodePool, KafkaTopic) or
 * {@code v1} (Secret, ConfigMap). A v1 document is read into the v1beta2 class: the v1 API removed
 * fields and added no new ones (Strimzi's v1 CRD API proposal), so a valid v1 document is a
 * valid v1beta2 one; {@link V1Api} rejects the removed fields. What this cannot check:
 * examples/strimzi/README.md, "What the validation checks".
 */
final class StrictYaml {
    private StrictYaml() {}

    /** apiVersion/kind of the documents this reads, to the model class. */
    static final Map<String, Class<?>> KINDS = Map.of(
            "kafka.strimzi.io/v1 Kafka", Kafka.class,
            "kafka.strimzi.io/v1 KafkaNodePool", KafkaNodePool.class,
            "kafka.strimzi.io/v1 KafkaTopic", KafkaTopic.class,
            "v1 Secret", Secret.class,
            "v1 ConfigMap", ConfigMap.class);

    private static final Pattern DOCUMENT_SEPARATOR = Pattern.compile("(?m)^---[ \\t]*$");

    /** The strict mapper. */
    static final ObjectMapper MAPPER = strictMapper();

    /** One parsed document: where it is, its tree and its model object. */
    record Doc(String source, int index, int firstLine, String kind, String name, JsonNode tree, Object model) {
        /** "FILE document N (KIND NAME, line L)". */
        String where() {
            return source + " document " + index + " (" + kind + " " + name + ", line " + firstLine + ")";
        }

        <T> T as(Class<T> type) {
            if (!type.isInstance(model)) {
                throw new AssertionError(where() + " is not a " + type.getSimpleName());
            }
            return type.cast(model);
        }
    }

    /** A document that does not read: the message names the file, the document, the line and the field. */
    static class Invalid extends AssertionError {
        Invalid(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A document of a kind this does not read (not a Strimzi resource it knows, nor a Secret or ConfigMap). */
    static final class OtherKind extends Invalid {
        final String apiVersion;
        final String kind;

        OtherKind(String message, String apiVersion, String kind) {
            super(message, null);
            this.apiVersion = apiVersion;
            this.kind = kind;
        }
    }

    /** One document of {@link #parseEach}: either read ({@code doc}) or not ({@code problem}). */
    record Result(Doc doc, Invalid problem) {}

    /**
     * Every non-empty document of {@code text}, each read on its own: a document that does
     * not read is a {@link Result} with its problem and the others are still read (for the
     * validator, which reports every problem of a user's files, not the first).
     */
    static List<Result> parseEach(String source, String text, int firstLine) {
        List<Result> out = new ArrayList<>();
        String[] chunks = DOCUMENT_SEPARATOR.split(text, -1);
        int line = firstLine;
        int index = 0;
        for (String chunk : chunks) {
            int chunkLine = line;
            line += (int) chunk.chars().filter(c -> c == '\n').count();
            if (isBlank(chunk)) {
                continue;
            }
            index++;
            try {
                out.add(new Result(parseDocument(source, index, chunkLine, chunk), null));
            } catch (Invalid e) {
                out.add(new Result(null, e));
            }
        }
        return out;
    }

    /**
     * Every non-empty document of {@code text}; {@code source} and {@code firstLine} (of
     * {@code text} in its file) name them in errors. Throws AssertionError on the first
     * document that does not read strictly.
     */
    static List<Doc> parse(String source, String text, int firstLine) {
        List<Doc> docs = new ArrayList<>();
        String[] chunks = DOCUMENT_SEPARATOR.split(text, -1);
        int line = firstLine;
        int index = 0;
        for (String chunk : chunks) {
            // A chunk starts on the line of the separator before it (the rest of that line),
            // the first one on firstLine; Jackson's line 1 of the chunk is that line.
            int chunkLine = line;
            line += (int) chunk.chars().filter(c -> c == '\n').count();
            if (isBlank(chunk)) {
                continue;
            }
            index++;
            docs.add(parseDocument(source, index, chunkLine, chunk));
        }
        return docs;
    }

    /**
     * A YAML fragment of a {@code kind} resource at {@code path} (dotted, e.g.
     * {@code spec.kafka.tieredStorage}): nested under that path in an otherwise empty
     * resource and read strictly.
     */
    static Doc parseFragment(String source, int firstLine, String text, String kind, String path) {
        String where = source + " line " + firstLine + " (fragment of " + kind + " at " + path + ")";
        Class<?> type = KINDS.get(kind);
        if (type == null) {
            throw new Invalid(where + ": unknown kind; known: " + KINDS.keySet(), null);
        }
        JsonNode fragment;
        try {
            fragment = MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw new Invalid(where + ": not YAML: " + e.getOriginalMessage(), e);
        }
        ObjectNode root = MAPPER.createObjectNode();
        String[] apiAndKind = kind.split(" ");
        root.put("apiVersion", apiAndKind[0]).put("kind", apiAndKind[1]);
        root.putObject("metadata").put("name", "fragment");
        ObjectNode at = root;
        for (String step : path.split("\\.")) {
            at = at.has(step) ? (ObjectNode) at.get(step) : at.putObject(step);
        }
        if (!(fragment instanceof ObjectNode obj)) {
            throw new Invalid(where + ": a fragment must be a mapping", null);
        }
        at.setAll(obj);
        try {
            Object model = MAPPER.treeToValue(root, type);
            return new Doc(source, 1, firstLine, apiAndKind[1], "fragment", root, model);
        } catch (JsonProcessingException e) {
            throw new Invalid(where + ": " + describe(e), e);
        }
    }

    private static Doc parseDocument(String source, int index, int chunkLine, String chunk) {
        int firstLine = chunkLine + firstContentLine(chunk);
        String at = source + " document " + index + " (line " + firstLine + ")";
        JsonNode tree;
        try {
            tree = MAPPER.readTree(chunk);
        } catch (JsonProcessingException e) {
            throw new Invalid(at + ": not YAML: " + describe(e, chunkLine), e);
        }
        if (tree == null || !tree.isObject()) {
            throw new Invalid(at + ": not a mapping", null);
        }
        String apiVersion = tree.path("apiVersion").asText("");
        String kind = tree.path("kind").asText("");
        String name = tree.path("metadata").path("name").asText("");
        Class<?> type = KINDS.get(apiVersion + " " + kind);
        if (type == null) {
            String message = at + ": apiVersion '" + apiVersion + "' kind '" + kind
                    + "' is not one this validates; expected one of " + KINDS.keySet()
                    + " (Strimzi resources are kafka.strimzi.io/v1 since Strimzi 1.0)";
            boolean knownKindOtherVersion = KINDS.keySet().stream().anyMatch(k -> k.endsWith(" " + kind))
                    && (apiVersion.startsWith("kafka.strimzi.io/") || apiVersion.equals("v1"));
            if (knownKindOtherVersion) {
                throw new Invalid(message + ": change apiVersion to " + KINDS.keySet().stream()
                        .filter(k -> k.endsWith(" " + kind)).findFirst().orElseThrow().split(" ")[0], null);
            }
            throw new OtherKind(message, apiVersion, kind);
        }
        if (name.isEmpty()) {
            throw new Invalid(at + ": no metadata.name", null);
        }
        try {
            Object model = MAPPER.readerFor(type).readValue(chunk);
            return new Doc(source, index, firstLine, kind, name, tree, model);
        } catch (JsonProcessingException e) {
            throw new Invalid(at + " " + kind + " " + name + ": " + describe(e, chunkLine), e);
        }
    }

    /** The error with the field's path and the line in the file. */
    private static String describe(JsonProcessingException e, int firstLine) {
        JsonLocation loc = e.getLocation();
        String line = loc == null || loc.getLineNr() < 1 ? "" : "line " + (firstLine + loc.getLineNr() - 1) + ": ";
        return line + describe(e);
    }

    private static String describe(JsonProcessingException e) {
        String path = e instanceof JsonMappingException m ? path(m.getPath()) : "";
        if (e instanceof UnrecognizedPropertyException u) {
            String known = u.getKnownPropertyIds() == null ? "?" : u.getKnownPropertyIds().stream()
                    .map(Object::toString).sorted().collect(Collectors.joining(", "));
            String guess = u.getKnownPropertyIds() == null ? null
                    : DidYouMean.closest(u.getPropertyName(), u.getKnownPropertyIds().stream().map(Object::toString).toList());
            return "unknown field '" + u.getPropertyName() + "' at " + path
                    + (guess == null ? "" : ": did you mean '" + guess + "'?")
                    + " (the model knows: " + known + ")";
        }
        return (path.isEmpty() ? "" : "at " + path + ": ") + coercionHint(e.getOriginalMessage());
    }

    private static final Pattern COERCE = Pattern.compile("Cannot coerce (\\w+) value \\((.*)\\) to `(?:java\\.lang\\.)?([\\w.]+)` value.*",
            Pattern.DOTALL);

    /** Jackson's "Cannot coerce ..." as what to do: quote a value the API wants as a string, or unquote one. */
    static String coercionHint(String message) {
        Matcher m = COERCE.matcher(message == null ? "" : message);
        if (!m.matches()) {
            return message;
        }
        String from = m.group(1);
        String value = m.group(2);
        String to = m.group(3);
        if (to.equals("String")) {
            return "the value " + value + " is " + (from.equals("Boolean") ? "a boolean" : "a number")
                    + " where the API wants a string: quote it, \"" + value + "\"";
        }
        return "the value " + value + " is a " + from.toLowerCase(java.util.Locale.ROOT) + " where the API wants "
                + (to.equals("Boolean") ? "a boolean" : "a number") + ": remove the quotes";
    }

    private static String path(List<JsonMappingException.Reference> refs) {
        StringBuilder b = new StringBuilder();
        for (JsonMappingException.Reference r : refs) {
            if (r.getFieldName() != null) {
                if (b.length() > 0) {
                    b.append('.');
                }
                b.append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                b.append('[').append(r.getIndex()).append(']');
            }
        }
        return b.toString();
    }

    /** 0-based index of the chunk's first line that is neither blank nor a comment. */
    private static int firstContentLine(String chunk) {
        List<String> lines = chunk.lines().toList();
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i).strip();
            if (!l.isEmpty() && !l.startsWith("#")) {
                return i;
            }
        }
        return 0;
    }

    private static boolean isBlank(String chunk) {
        return chunk.lines().map(String::strip).allMatch(l -> l.isEmpty() || l.startsWith("#"));
    }

    private static ObjectMapper strictMapper() {
        YAMLFactory yaml = YAMLFactory.builder()
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .build();
        SimpleModule strict = new SimpleModule("strict-unknown-fields");
        strict.setDeserializerModifier(new BeanDeserializerModifier() {
            @Override
            public BeanDeserializerBuilder updateBuilder(DeserializationConfig config, BeanDescription desc,
                    BeanDeserializerBuilder builder) {
                // Without the any-setter an unknown field is an error, not an entry of
                // additionalProperties.
                builder.setAnySetter(null);
                builder.setIgnoreUnknownProperties(false);
                return builder;
            }
        });
        ObjectMapper m = YAMLMapper.builder(yaml)
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
                .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
                .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
                .addModule(strict)
                .build();
        m.coercionConfigFor(LogicalType.Textual)
                .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        for (LogicalType t : new LogicalType[] {LogicalType.Integer, LogicalType.Float, LogicalType.Boolean}) {
            m.coercionConfigFor(t).setCoercion(CoercionInputShape.String, CoercionAction.Fail);
        }
        return m;
    }
}
