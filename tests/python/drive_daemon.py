"""Drives a running cuzk daemon with Python grpcio and stubs generated from our .proto.

Usage: drive_daemon.py STUBS_DIR TARGET REQUESTS_JSON
  STUBS_DIR      where grpc_tools.protoc wrote cuzk/v1/proving_pb2*.py
  TARGET         grpc target, e.g. unix:///tmp/x/cuzk.sock or 127.0.0.1:9820
  REQUESTS_JSON  {"winning-post": {...}, "window-post": {...}}: SubmitProofRequest fields,
                 bytes fields as hex
Prints one JSON object with what it saw; exits non-zero on any unexpected answer.
"""
import json
import sys

stubs, target, requests_path = sys.argv[1:4]
sys.path.insert(0, stubs)

import grpc  # noqa: E402
from cuzk.v1 import proving_pb2 as pb  # noqa: E402
from cuzk.v1 import proving_pb2_grpc as rpc  # noqa: E402

BYTES = {"vanilla_proof", "randomness", "comm_r_old", "comm_r_new", "comm_d_new", "prover_id"}


def submit_request(fields, request_id=""):
    kw = {}
    for k, v in fields.items():
        if k == "vanilla_proofs":
            kw[k] = [bytes.fromhex(x) for x in v]
        elif k in BYTES:
            kw[k] = bytes.fromhex(v)
        else:
            kw[k] = v
    kw["request_id"] = request_id
    return pb.SubmitProofRequest(**kw)


def expect(cond, what):
    if not cond:
        raise SystemExit("unexpected: " + what)


requests = json.load(open(requests_path))
out = {}
MAX = 256 << 20
# Over a unix socket, grpcio (>= 1.57) sends the socket path as the HTTP/2 :authority, which
# the daemon's HTTP/2 stack (h2) rejects as not RFC 9113 (PROTOCOL_ERROR); grpc-go, which
# Curio uses, sends "localhost", as we do here.
with grpc.insecure_channel(
    target,
    options=[
        ("grpc.max_send_message_length", MAX),
        ("grpc.max_receive_message_length", MAX),
        ("grpc.default_authority", "localhost"),
    ],
) as ch:
    stub = rpc.ProvingEngineStub(ch)

    st = stub.GetStatus(pb.GetStatusRequest(), timeout=5)
    expect(len(st.gpus) >= 1, "at least one device")
    expect(len(st.queues) == 4, "four queues")
    out["version"] = st.version

    # Prove, as Curio calls it: one call with a deadline.
    r = stub.Prove(pb.ProveRequest(submit=submit_request(requests["winning-post"])), timeout=600).result
    expect(r.status == pb.AwaitProofResponse.COMPLETED, "winning COMPLETED: " + r.error_message)
    out["winning_proof"] = r.proof.hex()
    out["winning_timings"] = [r.queue_wait_ms, r.srs_load_ms, r.synthesis_ms, r.gpu_compute_ms, r.total_ms]

    # Submit + Await, idempotent on request_id.
    req = submit_request(requests["window-post"], request_id="py-window-1")
    s1 = stub.SubmitProof(req, timeout=60)
    s2 = stub.SubmitProof(req, timeout=60)
    expect(s1.job_id == s2.job_id and s2.existing and not s1.existing, "same job for the same request_id")
    t = stub.AwaitProof(pb.AwaitProofRequest(job_id=s1.job_id, timeout_ms=1), timeout=60)
    expect(t.status in (pb.AwaitProofResponse.TIMEOUT, pb.AwaitProofResponse.COMPLETED), "await with timeout")
    a = stub.AwaitProof(pb.AwaitProofRequest(job_id=s1.job_id), timeout=600)
    expect(a.status == pb.AwaitProofResponse.COMPLETED, "window COMPLETED: " + a.error_message)
    out["window_proof"] = a.proof.hex()
    out["phases"] = {p.phase: p.ms for p in a.phases}

    # Errors carry gRPC codes.
    codes = {}
    try:
        stub.CancelProof(pb.CancelProofRequest(job_id="nope-1"), timeout=5)
    except grpc.RpcError as e:
        codes["cancel_unknown"] = e.code().name
    bad = submit_request(requests["window-post"])
    bad.randomness = b"\x01" * 31
    try:
        stub.SubmitProof(bad, timeout=5)
    except grpc.RpcError as e:
        codes["short_randomness"] = e.code().name
        out["short_randomness_message"] = e.details()
    bad = submit_request(requests["window-post"])
    bad.proof_kind = 77  # an enum value this client's stubs do not know either
    try:
        stub.SubmitProof(bad, timeout=5)
    except grpc.RpcError as e:
        codes["unknown_kind"] = e.code().name
    # Bytes that are not a protobuf message at all.
    raw = ch.unary_unary("/cuzk.v1.ProvingEngine/SubmitProof")
    try:
        raw(b"\xff\xff\xff\xff\x0f\x0a\x80", timeout=5)
    except grpc.RpcError as e:
        codes["garbage_message"] = e.code().name
    try:
        stub.EvictSRS(pb.EvictSrsRequest(circuit_id="nonsense"), timeout=5)
    except grpc.RpcError as e:
        codes["evict_nonsense"] = e.code().name
    out["codes"] = codes

    p = stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="wpost-2k"), timeout=60)
    expect(p.already_loaded, "wpost-2k was loaded by the proof")
    st = stub.GetStatus(pb.GetStatusRequest(), timeout=5)
    out["completed"] = st.total_proofs_completed
    out["srs"] = sorted((s.circuit_id, s.size_bytes) for s in st.loaded_srs)
    out["gpus"] = [{"ordinal": g.ordinal, "name": g.name, "busy_ms": g.busy_ms} for g in st.gpus]
    m = stub.GetMetrics(pb.GetMetricsRequest(), timeout=5).prometheus_text
    out["metrics_completed_window"] = [l for l in m.splitlines() if l.startswith('cuzk_jobs_completed_total{kind="window-post"}')]

print(json.dumps(out))
