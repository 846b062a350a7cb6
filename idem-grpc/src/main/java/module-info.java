/**
 * Idempotency keys for grpc-java unary calls: the server and client interceptors, the key helpers,
 * the fingerprint rule of protobuf messages and transactional mode's connection in the call's
 * context. Exports {@code dev.idem.grpc}; {@code dev.idem.grpc.internal} (the captured call, the
 * refusals, the stored answers) is not exported.
 *
 * <p>grpc-java and protobuf are automatic modules from their manifests ({@code io.grpc}, {@code
 * io.grpc.stub}, {@code io.grpc.protobuf}, {@code com.google.protobuf}). In the grpc-java release
 * this module is built against (1.85), {@code io.grpc.Context} is in grpc-api and grpc-context is
 * an empty jar, so the package {@code io.grpc} is not split between two jars. {@code proto-google-common-protos} (the {@code google.rpc}
 * details of the refusals, used inside this module only) has no module name: on the module path it
 * is the automatic module {@code proto.google.common.protos}, the name its file name gives, and
 * Maven's compiler plugin warns of it ("Required filename-based automodules detected").
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.idem.grpc {
  requires transitive dev.idem.core;
  requires transitive io.grpc; // ServerInterceptor, ClientInterceptor, Metadata, Context keys are API
  requires transitive io.grpc.stub; // IdempotencyKeys.withKey takes a stub
  requires transitive com.google.protobuf; // MessageFingerprints takes a MessageLite
  requires io.grpc.protobuf;
  requires proto.google.common.protos;
  requires static transitive org.jspecify;

  exports dev.idem.grpc;
}
