"""A go-plugin client in Python (gRPC's C core, BoringSSL): starts the provider the way
go-plugin does, completes AutoMTLS, calls a few tfplugin6 RPCs, and shuts it down.

    python go_plugin_client.py PROVIDER CLIENT_CERT_PEM CLIENT_KEY_PEM OTHER_CERT_PEM OTHER_KEY_PEM PROTO_DIR

AutoMTLS as go-plugin specifies it: the client's certificate goes to the plugin in
PLUGIN_CLIENT_CERT; the plugin's certificate comes back, base64 (standard alphabet, no
padding), as the last field of the handshake line
`CORE-VERSION|APP-VERSION|NETWORK|ADDRESS|PROTOCOL|CERT`, and is the only root the client trusts
(server name "localhost"). Prints a transcript, one step a line; exits non-zero on any failure.
"""

import base64
import os
import subprocess
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc

provider, cert_pem, key_pem, other_cert_pem, other_key_pem, proto_dir = sys.argv[1:7]

# Stubs from the provider's own .proto files.
out = tempfile.mkdtemp()
well_known = os.path.join(os.path.dirname(protoc.__file__), "_proto")
for proto in ["tfplugin6.proto", "plugin/grpc_controller.proto"]:
    code = protoc.main(["protoc", f"-I{proto_dir}", f"-I{well_known}", f"--python_out={out}", f"--grpc_python_out={out}", proto])
    assert code == 0, f"protoc {proto}: {code}"
sys.path.insert(0, out)
sys.path.insert(0, os.path.join(out, "plugin"))
import tfplugin6_pb2 as tf  # noqa: E402
import tfplugin6_pb2_grpc as tf_grpc  # noqa: E402
from plugin import grpc_controller_pb2 as ctl, grpc_controller_pb2_grpc as ctl_grpc  # noqa: E402

client_cert = open(cert_pem, "rb").read()
env = dict(
    os.environ,
    TF_PLUGIN_MAGIC_COOKIE="d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
    PLUGIN_PROTOCOL_VERSIONS="6",
    PLUGIN_MIN_PORT="10000",
    PLUGIN_MAX_PORT="25000",
    PLUGIN_CLIENT_CERT=client_cert.decode(),
)
started = time.monotonic()
plugin = subprocess.Popen([provider], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
line = plugin.stdout.readline().decode().strip()
core, app, network, address, protocol, cert_b64 = line.split("|")
assert (core, app, network, protocol) == ("1", "6", "tcp", "grpc"), line
der = base64.b64decode(cert_b64 + "=" * (-len(cert_b64) % 4))
server_pem = b"-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(der) + b"-----END CERTIFICATE-----\n"
print(f"handshake: {core}|{app}|{network}|{address}|{protocol}|<{len(der)}-byte certificate> after {1000 * (time.monotonic() - started):.1f} ms")
key_type = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-text"], input=der, capture_output=True, check=True).stdout.decode()
algorithm = next(l.strip() for l in key_type.splitlines() if "Public Key Algorithm" in l)
curve = next((l.strip() for l in key_type.splitlines() if "NIST CURVE" in l), "")
print(f"server certificate: {algorithm} {curve}".rstrip())


def channel(cert, key):
    credentials = grpc.ssl_channel_credentials(root_certificates=server_pem, private_key=key, certificate_chain=cert)
    return grpc.secure_channel(address, credentials, options=[("grpc.ssl_target_name_override", "localhost")])


try:
    with channel(client_cert, open(key_pem, "rb").read()) as ch:
        grpc.channel_ready_future(ch).result(timeout=10)
        print("TLS: connected with the client certificate from PLUGIN_CLIENT_CERT")
        provider_stub = tf_grpc.ProviderStub(ch)
        metadata = provider_stub.GetMetadata(tf.GetMetadata.Request(), timeout=10)
        resources = sorted(r.type_name for r in metadata.resources)
        print(f"GetMetadata: resources {', '.join(resources)}; {len(metadata.data_sources)} data sources, {len(metadata.functions)} functions")
        schema = provider_stub.GetProviderSchema(tf.GetProviderSchema.Request(), timeout=10)
        assert not schema.diagnostics, schema.diagnostics
        blocks = sorted(b.type_name for b in schema.provider.block.block_types)
        print(f"GetProviderSchema: provider blocks {', '.join(blocks)}; {len(schema.resource_schemas)} resource schemas")
        # provider::locality::canonical_ip("2001:DB8::0001"): msgpack in, msgpack out.
        call = provider_stub.CallFunction(
            tf.CallFunction.Request(name="canonical_ip", arguments=[tf.DynamicValue(msgpack=b"\xae2001:DB8::0001")]),
            timeout=10,
        )
        assert not call.HasField("error"), call.error
        result = call.result.msgpack
        assert result[0] == 0xA0 + len(result) - 1, result
        print(f"CallFunction canonical_ip(\"2001:DB8::0001\"): {result[1:].decode()!r}")
        stop = provider_stub.StopProvider(tf.StopProvider.Request(), timeout=10)
        print(f"StopProvider: error {stop.Error!r}")

    # A second client with another certificate: refused by the provider.
    with channel(open(other_cert_pem, "rb").read(), open(other_key_pem, "rb").read()) as ch:
        try:
            tf_grpc.ProviderStub(ch).GetMetadata(tf.GetMetadata.Request(), timeout=5)
            print("another certificate: ACCEPTED")
            sys.exit(1)
        except grpc.RpcError as e:
            print(f"another certificate: refused ({e.code().name})")

    with channel(client_cert, open(key_pem, "rb").read()) as ch:
        ctl_grpc.GRPCControllerStub(ch).Shutdown(ctl.Empty(), timeout=10)
    code = plugin.wait(timeout=10)
    print(f"Shutdown: the provider exited with {code}")
    assert code == 0
finally:
    if plugin.poll() is None:
        plugin.kill()
