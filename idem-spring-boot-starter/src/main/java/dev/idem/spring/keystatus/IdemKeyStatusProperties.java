package dev.idem.spring.keystatus;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code idem.key-status.*} properties: the key status endpoint ({@link
 * dev.idem.servlet.KeyStatusEndpoint}), off by default. Bound once at start-up.
 */
@ConfigurationProperties(prefix = "idem.key-status")
public class IdemKeyStatusProperties {

  /**
   * Whether to answer GET {path}/{key}?operation=METHOD%20pattern with what the store knows of the
   * caller's own key (completed with its stored status and times, or in progress with its lease),
   * and 404 for an unknown, expired or another principal's key, alike. The principal and operation
   * are derived as the Idempotency-Key filter derives them.
   */
  private boolean enabled = false;

  /** The endpoint's path inside the context: "/" and segments of letters, digits, ".", "_", "~" or "-", no trailing "/". */
  private String path = "/idempotency-keys";

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getPath() {
    return path;
  }

  public void setPath(String path) {
    this.path = path;
  }
}
