package dev.idem.spring;

import dev.idem.core.ResponseProtection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What {@link IdemProperties.Protection} holds (that class, in {@link IdemProperties}, is the type that is
 * bound; this one keeps {@code IdemProperties.java} short). Like every properties class, not
 * thread-safe: bound once at start-up, then only read.
 */
public abstract class IdemProtectionProperties {
  /**
   * The keyring: key id (1 to 32 characters [A-Za-z0-9._-], stored in clear in each record) to
   * the base64 of 32 random bytes (for example the output of openssl rand -base64 32). Keep every
   * key that protected live records, that is, for one retention after it stopped being current.
   */
  private Map<String, String> keys = new LinkedHashMap<>();

  /** The id of the key that protects new records; setting it turns protection on. */
  private @Nullable String currentKey;

  /**
   * Whether records written in clear before protection was turned on are still replayed (default
   * true); set false once one retention has passed, so that a plaintext record planted in the
   * store is refused.
   */
  private boolean acceptPlaintextRecords = true;

  public Map<String, String> getKeys() {
    return keys;
  }

  public void setKeys(Map<String, String> keys) {
    this.keys = keys;
  }

  public @Nullable String getCurrentKey() {
    return currentKey;
  }

  public void setCurrentKey(@Nullable String currentKey) {
    this.currentKey = currentKey;
  }

  public boolean isAcceptPlaintextRecords() {
    return acceptPlaintextRecords;
  }

  public void setAcceptPlaintextRecords(boolean acceptPlaintextRecords) {
    this.acceptPlaintextRecords = acceptPlaintextRecords;
  }

  /**
   * @return the keyring, or {@link dev.idem.core.ResponseProtection#none()} when no current key
   *     is set
   * @throws IdemConfigurationException naming the property when a key or the current key is
   *     wrong, or keys are given without a current key
   */
  public ResponseProtection build() {
    if (currentKey == null || currentKey.isBlank()) {
      if (keys != null && !keys.isEmpty()) {
        throw new IdemConfigurationException("idem.protection.current-key",
            "is not set, but idem.protection.keys has " + keys.keySet() + ": choose the key that protects new records", null);
      }
      return ResponseProtection.none();
    }
    ResponseProtection.Builder builder =
        ResponseProtection.builder().acceptPlaintextRecords(acceptPlaintextRecords);
    for (Map.Entry<String, String> key : keys.entrySet()) {
      try {
        builder.key(key.getKey(), key.getValue() == null ? "" : key.getValue());
      } catch (IllegalArgumentException e) {
        // the message names the key id and the rule, never the key's value
        throw new IdemConfigurationException("idem.protection.keys." + key.getKey(), e.getMessage(), null);
      }
    }
    try {
      return builder.currentKey(currentKey.trim()).build();
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new IdemConfigurationException("idem.protection.current-key", e.getMessage(), null);
    }
  }
}
