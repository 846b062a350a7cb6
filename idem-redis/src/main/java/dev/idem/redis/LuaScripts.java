package dev.idem.redis;

import dev.idem.redis.RedisStoreClient.Script;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** {@link RedisLeaseStore}'s Lua scripts, loaded once, and the byte helpers they need. Stateless; thread-safe. */
final class LuaScripts {

  /*
   * The Lua scripts are resource files next to RedisLeaseStore (src/main/resources/dev/idem/redis), read
   * once when the class loads. Each starts with prelude.lua (the record key, "now" from the server's
   * clock), COMPLETE and RELEASE then read-owner.lua (the record's state, owner and expiry); the top
   * of each file says what its KEYS and ARGV are and what it returns.
   */
  static final Script CLAIM = load("claim", true, "prelude.lua", "claim.lua");
  static final Script COMPLETE = load("complete", false, "prelude.lua", "read-owner.lua", "complete.lua");
  static final Script RELEASE = load("release", false, "prelude.lua", "read-owner.lua", "release.lua");
  static final Script PURGE = load("purge", false, "prelude.lua", "purge.lua");
  static final Script STATUS = load("status", true, "prelude.lua", "status.lua");

  private LuaScripts() {}

  /**
   * A Lua script with its SHA-1, as {@code EVALSHA} wants it (40 lowercase hex digits).
   *
   * @param name the script's name in error messages
   * @param returnsArray whether it replies with an array (else an integer)
   * @param files resource files in this class's package, concatenated in order
   * @throws IllegalStateException if a file is missing from the class path or unreadable
   */
  private static Script load(String name, boolean returnsArray, String... files) {
    ByteArrayOutputStream source = new ByteArrayOutputStream();
    for (String file : files) {
      try (InputStream in = LuaScripts.class.getResourceAsStream(file)) {
        if (in == null) {
          throw new IllegalStateException("the Lua script " + file + " is missing from the class path");
        }
        in.transferTo(source);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read the Lua script " + file, e);
      }
    }
    byte[] bytes = source.toByteArray();
    return new Script(name, bytes, utf8(HexFormat.of().formatHex(digest("SHA-1").digest(bytes))), returnsArray);
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static MessageDigest digest(String algorithm) {
    try {
      return MessageDigest.getInstance(algorithm);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(algorithm + " is required of every Java platform", e);
    }
  }
}
