package io.tsm.examples.strimzi;

import java.util.Locale;

/**
 * One result of the validation: how bad it is, where (file, document, resource), the field's
 * path in the resource, and what is wrong and what to do.
 *
 * <p>{@link Level#ERROR}: tsm would not work as configured (the broker does not start, the
 * plugin refuses its configuration, a file it needs is not in the pod, the pod runs out of
 * memory). {@link Level#WARNING}: it works, but against a recommendation of docs/strimzi.md.
 * {@link Level#NOTE}: what the validation could not check, or worth knowing.
 */
record Finding(Level level, String where, String field, String message) {
    enum Level { ERROR, WARNING, NOTE }

    static Finding error(String where, String field, String message) {
        return new Finding(Level.ERROR, where, field, message);
    }

    static Finding warning(String where, String field, String message) {
        return new Finding(Level.WARNING, where, field, message);
    }

    static Finding note(String where, String field, String message) {
        return new Finding(Level.NOTE, where, field, message);
    }

    /** "error: kafka.yaml document 3 (Kafka payments, line 99): spec.kafka.image: ...". */
    String format() {
        StringBuilder b = new StringBuilder(level.name().toLowerCase(Locale.ROOT)).append(": ");
        if (where != null && !where.isEmpty()) {
            b.append(where).append(": ");
        }
        if (field != null && !field.isEmpty()) {
            b.append(field).append(": ");
        }
        return b.append(message).toString();
    }

    @Override
    public String toString() {
        return format();
    }
}
