package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.KeyToPath;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.strimzi.api.kafka.model.common.template.AdditionalVolume;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;

/**
 * A key file path of the rsm config resolves, on a broker pool, to a key of an example Secret:
 * the path lies under a read-only volume mount (under /mnt, where Strimzi puts additional
 * volumes) of the Kafka container, that volume is a Secret volume of the pod template, and the
 * file name below the mount is one of the Secret's keys (or an {@code items} path mapped from
 * one).
 */
final class KeyRingMount {
    private KeyRingMount() {}

    static void check(Kafka kafka, KafkaNodePool pool, String key, String file) {
        String at = "pool " + pool.getMetadata().getName() + ", " + key + "=" + file;
        Path path = Paths.get(file);
        assertTrue(path.isAbsolute(), at + ": an absolute path");
        List<VolumeMount> mounts = Examples.containerTemplate(kafka, pool).map(t -> t.getVolumeMounts()).orElse(List.of());
        VolumeMount mount = mounts.stream().filter(m -> path.startsWith(Paths.get(m.getMountPath()))).findFirst()
                .orElseThrow(() -> new AssertionError(at + ": under no volume mount of the Kafka container " + mounts.stream().map(VolumeMount::getMountPath).toList()));
        assertTrue(mount.getMountPath().startsWith("/mnt/"), at + ": Strimzi mounts additional volumes under /mnt, not " + mount.getMountPath());
        assertEquals(Boolean.TRUE, mount.getReadOnly(), at + ": mount " + mount.getName() + " read-only");
        List<AdditionalVolume> volumes = Examples.podTemplate(kafka, pool).map(t -> t.getVolumes()).orElse(List.of());
        AdditionalVolume volume = volumes.stream().filter(v -> v.getName().equals(mount.getName())).findFirst()
                .orElseThrow(() -> new AssertionError(at + ": no pod template volume named " + mount.getName()));
        assertNotNull(volume.getSecret(), at + ": volume " + volume.getName() + " must be a Secret volume");
        String secretName = volume.getSecret().getSecretName();
        Secret secret = Examples.secret(secretName)
                .orElseThrow(() -> new AssertionError(at + ": Secret " + secretName + " is not among the example Secrets"));
        String relative = Paths.get(mount.getMountPath()).relativize(path).toString();
        List<KeyToPath> items = volume.getSecret().getItems();
        Optional<String> secretKey = items == null || items.isEmpty()
                ? Optional.of(relative)
                : items.stream().filter(i -> i.getPath().equals(relative)).map(KeyToPath::getKey).findFirst();
        assertTrue(secretKey.isPresent(), at + ": no items entry of volume " + volume.getName() + " maps to " + relative);
        assertTrue(secret.getStringData().containsKey(secretKey.get()),
                at + ": Secret " + secretName + " has no key " + secretKey.get() + " (keys: " + secret.getStringData().keySet() + ")");
    }
}
