package io.tsm.kafka;

import java.lang.reflect.Constructor;

import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;

/**
 * Awaits native operations in bounded slices and maps failures onto Kafka's exceptions.
 *
 * <p>Every native wait lasts at most {@link #SLICE_MS} ms; between slices the calling thread's
 * interrupt flag is checked, so a broker thread interrupted (shutdown, a leadership change, a
 * task cancelled with interruption) gets a {@link RemoteStorageException} promptly (the native
 * task is aborted and the flag is restored). Current brokers do not interrupt a remote read
 * that outlives remote.fetch.max.wait.ms (docs/broker-contract.md "Remote reads are not
 * interrupted"): the engine's own deadlines end those.
 */
final class Calls {
    private Calls() {}

    /** Longest single native wait (ms). */
    static final long SLICE_MS = 100;

    private static final String RETRIABLE =
            "org.apache.kafka.server.log.remote.storage.RetriableRemoteStorageException";

    /** The retriable exception's constructor where this broker has the class (Kafka 4.1+). */
    private static final Constructor<? extends RemoteStorageException> RETRIABLE_CTOR = findRetriable();

    private static Constructor<? extends RemoteStorageException> findRetriable() {
        try {
            Class<?> c = Class.forName(RETRIABLE, false, RemoteStorageException.class.getClassLoader());
            return c.asSubclass(RemoteStorageException.class).getConstructor(String.class);
        } catch (ReflectiveOperationException | LinkageError | ClassCastException e) {
            return null;
        }
    }

    /** True when this runtime has RetriableRemoteStorageException. */
    static boolean hasRetriable() {
        return RETRIABLE_CTOR != null;
    }

    /**
     * Waits until {@code op} finished successfully (the caller then takes its result), or throws
     * the mapped exception (the op is then freed). Interrupts cancel the op.
     */
    static void await(long op, String what) throws RemoteStorageException {
        boolean settled = false;
        try {
            while (true) {
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw new RemoteStorageException(what + ": interrupted",
                            new InterruptedException("interrupted while waiting for native code"));
                }
                int status = NativeBridge.await(op, SLICE_MS);
                if (status == NativeBridge.PENDING) {
                    continue;
                }
                if (status == NativeBridge.OK) {
                    settled = true;
                    return;
                }
                String message = NativeBridge.takeError(op);
                settled = true;
                throw map(status, what + ": " + message);
            }
        } catch (RuntimeException e) {
            throw nativeFailure(what, e);
        } finally {
            if (!settled) {
                NativeBridge.cancel(op);
            }
        }
    }

    /**
     * As {@link #await}, but an interrupt does not cancel the op: it runs to its end (every
     * native call is bounded by the engine's deadlines) and the interrupt flag is restored
     * afterwards. For clean-up the broker issues on interrupted threads (delete).
     */
    static void awaitThroughInterrupts(long op, String what) throws RemoteStorageException {
        boolean interrupted = false;
        boolean settled = false;
        try {
            while (true) {
                interrupted |= Thread.interrupted();
                int status = NativeBridge.await(op, SLICE_MS);
                if (status == NativeBridge.PENDING) {
                    continue;
                }
                settled = true;
                if (status == NativeBridge.OK) {
                    return;
                }
                throw map(status, what + ": " + NativeBridge.takeError(op));
            }
        } catch (RuntimeException e) {
            throw nativeFailure(what, e);
        } finally {
            if (!settled) {
                NativeBridge.cancel(op);
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A RuntimeException out of native code (a panic, a JNI failure) as RemoteStorageException. */
    static RemoteStorageException nativeFailure(String what, RuntimeException e) {
        return new RemoteStorageException(what + ": native failure: " + e.getMessage(), e);
    }

    /** Maps a native status code onto the exception the broker expects. */
    static RemoteStorageException map(int status, String message) {
        switch (status) {
            case NativeBridge.NOT_FOUND:
                return new RemoteResourceNotFoundException(message);
            case NativeBridge.TRANSIENT:
                if (RETRIABLE_CTOR != null) {
                    try {
                        return RETRIABLE_CTOR.newInstance(message);
                    } catch (ReflectiveOperationException e) {
                        return new RemoteStorageException(message);
                    }
                }
                return new RemoteStorageException(message);
            case NativeBridge.PANIC:
                return new RemoteStorageException("native panic: " + message);
            default:
                return new RemoteStorageException(message);
        }
    }
}
