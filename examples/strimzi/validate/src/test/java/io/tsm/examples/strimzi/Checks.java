package io.tsm.examples.strimzi;

/** Assertions that hand back what they checked. */
final class Checks {
    private Checks() {}

    /** {@code value}, or an AssertionError naming {@code what} when it is null. */
    static <T> T present(T value, String what) {
        if (value == null) {
            throw new AssertionError(what + " is missing");
        }
        return value;
    }
}
