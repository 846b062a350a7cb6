package dev.idem.kafka;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import kafka.testkit.KafkaClusterTestKit;
import kafka.testkit.TestKitNodes;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Assumptions;

/**
 * One Kafka broker in KRaft mode (combined broker and controller), started in this JVM from
 * Kafka's own broker jars the first time a test asks for it and shared by every test of the JVM;
 * it listens on a free loopback port and keeps its logs in a temporary directory, both gone when
 * the JVM exits. Topics are not created automatically: each test makes its own, with unique names.
 *
 * <p>When it cannot start, the test is skipped with a message, except under {@code CI=true}, where
 * it fails.
 */
public final class KafkaBroker {

  private static KafkaClusterTestKit cluster;
  private static RuntimeException failure;
  private static Admin admin;

  private KafkaBroker() {}

  /** @return the bootstrap servers of the shared broker, starting it on first use */
  public static synchronized String bootstrapServers() {
    if (cluster == null && failure == null) {
      long started = System.nanoTime();
      // The broker ends its JVM (Exit.exit, Exit.halt) on a fatal error, shutdown included: in a
      // test JVM that ends the fork with a non-zero status after the tests passed, and the build
      // fails without a word of why. Here such an error is thrown where it happens instead.
      Exit.setExitProcedure((code, message) -> {
        throw new IllegalStateException("the Kafka broker asked to exit with status " + code + ": " + message);
      });
      Exit.setHaltProcedure((code, message) -> {
        throw new IllegalStateException("the Kafka broker asked to halt with status " + code + ": " + message);
      });
      try {
        KafkaClusterTestKit c = new KafkaClusterTestKit.Builder(
            new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build())
            .setConfigProp("auto.create.topics.enable", "false")
            .setConfigProp("group.initial.rebalance.delay.ms", "0")
            .setConfigProp("offsets.topic.replication.factor", "1")
            .setConfigProp("offsets.topic.num.partitions", "4")
            .setConfigProp("transaction.state.log.replication.factor", "1")
            .setConfigProp("transaction.state.log.min.isr", "1")
            .build();
        c.format();
        c.startup();
        c.waitForReadyBrokers();
        cluster = c;
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, c.bootstrapServers()));
        System.err.printf("[idem-kafka] KRaft broker at %s started in %d ms%n", c.bootstrapServers(),
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        Runtime.getRuntime().addShutdownHook(new Thread(KafkaBroker::stop, "idem-kafka-broker-stop"));
      } catch (Exception e) {
        failure = new IllegalStateException("the in-process Kafka broker could not start: " + e, e);
      }
    }
    if (failure != null) {
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(failure.getMessage() + "; under CI=true a broker that cannot start is a failure", failure);
      }
      System.err.println("[idem-kafka] SKIPPED: " + failure.getMessage());
      Assumptions.abort(failure.getMessage());
    }
    return cluster.bootstrapServers();
  }

  private static synchronized void stop() {
    try {
      if (admin != null) {
        admin.close(Duration.ofSeconds(2));
      }
      if (cluster != null) {
        cluster.close();
      }
    } catch (Exception ignored) {
      // the JVM is exiting
    }
  }

  /** @return the shared broker's admin client (do not close it) */
  public static synchronized Admin admin() {
    bootstrapServers();
    return admin;
  }

  /** @return a new topic name, unique in this broker's life */
  public static String uniqueTopic(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  }

  /** Creates topics with {@code partitions} partitions each, replication factor 1, and waits for them. */
  public static void createTopics(int partitions, String... names) throws Exception {
    admin().createTopics(java.util.Arrays.stream(names).map(n -> new NewTopic(n, partitions, (short) 1)).toList())
        .all().get(30, TimeUnit.SECONDS);
  }

  /** Deletes topics, ignoring ones that do not exist. */
  public static void deleteTopics(Collection<String> names) {
    try {
      admin().deleteTopics(names).all().get(30, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // already gone
    }
  }

  /** @return records of {@code topic} not yet committed by {@code group}: the group's lag */
  public static long lag(String group, String topic) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
    try (KafkaConsumer<byte[], byte[]> c = reader()) {
      List<TopicPartition> partitions = c.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      long lag = 0;
      for (Map.Entry<TopicPartition, Long> end : c.endOffsets(partitions).entrySet()) {
        OffsetAndMetadata at = committed.get(end.getKey());
        lag += end.getValue() - (at == null ? 0 : at.offset());
      }
      return lag;
    }
  }

  /** @return how many records {@code topic} holds: the sum of its partitions' end offsets */
  public static long endOffsetsSum(String topic) {
    try (KafkaConsumer<byte[], byte[]> c = reader()) {
      List<TopicPartition> partitions = c.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      return c.endOffsets(partitions).values().stream().mapToLong(Long::longValue).sum();
    }
  }

  /** @return a consumer without a group, for reading topics from the start with {@code assign} */
  public static KafkaConsumer<byte[], byte[]> reader() {
    return new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"));
  }

  /** @return every partition of the topic */
  public static Set<TopicPartition> partitions(KafkaConsumer<?, ?> c, String topic) {
    return c.partitionsFor(topic).stream().map(p -> new TopicPartition(topic, p.partition()))
        .collect(java.util.stream.Collectors.toSet());
  }
}
