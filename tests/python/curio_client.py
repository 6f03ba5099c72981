"""Curio's cuzk client, request for request, in Python grpcio.

Builds every SubmitProofRequest field by field as Curio's Go code does (curio e0294b0f:
lib/ffi/cuzk_funcs.go for PoRep, SnapDeals, WindowPoSt and WinningPoSt,
tasks/proofshare/task_prove.go for ProofShare's PoRep, lib/cuzk/client.go for the call) and
calls Prove with a deadline, as Curio's client does. Then it sends what a broken node or a
broken network would (bad envelopes) and checks the daemon refuses each and keeps serving.

Usage: curio_client.py STUBS_DIR TARGET SECTORS_JSON
  SECTORS_JSON  what a Curio node holds for one 2 KiB sector of miner f0<miner>: the api-form
                C1 output (as ffi.SealCommitPhase1 returns it) of an interactive and of a
                synthetic sealing, PoSt vanilla proofs and chain randomness (not yet masked),
                SnapDeals vanilla proofs and commitments; bytes as hex.
Prints one JSON object: the proofs by name (hex), job ids, and each refusal's code and message.
"""
import base64
import json
import sys

stubs, target, sectors_path = sys.argv[1:4]
sys.path.insert(0, stubs)

import grpc  # noqa: E402
from cuzk.v1 import proving_pb2 as pb  # noqa: E402
from cuzk.v1 import proving_pb2_grpc as rpc  # noqa: E402

S = json.load(open(sectors_path))
MINER, SECTOR, SIZE = S["miner"], S["sector"], S["sector_size"]
PROVE_TIMEOUT = 30 * 60  # Curio's [Cuzk] ProveTimeout default


def go_json(obj):
    """encoding/json's compact output (keys in the order given)."""
    return json.dumps(obj, separators=(",", ":"))


def wrap_c1(c1_json: bytes, sector_number: int, sector_size: int) -> bytes:
    """cuzk_funcs.go wrapC1Output: json.Marshal(c1OutputWrapper{SectorNum, Phase1Out []byte,
    SectorSize}); a []byte is standard base64 with padding."""
    return go_json(
        {
            "SectorNum": sector_number,
            "Phase1Out": base64.b64encode(c1_json).decode(),
            "SectorSize": sector_size,
        }
    ).encode()


def go_reencode(c1_json: bytes) -> bytes:
    """ProofShare: json.Unmarshal into proof.Commit1OutRaw, then json.Marshal: the top-level
    keys in the Go struct's order, the nested proofs as they were."""
    c1 = json.loads(c1_json)
    order = ["comm_d", "comm_r", "registered_proof", "replica_id", "seed", "ticket", "vanilla_proofs"]
    return go_json({k: c1[k] for k in order}).encode()


def masked(hex_randomness: str) -> bytes:
    r = bytearray(bytes.fromhex(hex_randomness))
    r[31] &= 0x3F  # make into fr, as winning_task.go and compute_do.go do
    return bytes(r)


def porep_request(entry, vanilla_proof, request_id):
    return pb.SubmitProofRequest(
        request_id=request_id,
        proof_kind=pb.POREP_SEAL_COMMIT,
        sector_size=SIZE,
        registered_proof=entry["registered_proof"],
        priority=pb.NORMAL,
        vanilla_proof=vanilla_proof,
        sector_number=SECTOR,
        miner_id=MINER,
    )


def porep(entry):
    c1 = bytes.fromhex(entry["c1"])
    return porep_request(entry, wrap_c1(c1, SECTOR, SIZE), "porep-%d-%d" % (MINER, SECTOR))


def proofshare_porep(entry, task_id):
    c1 = go_reencode(bytes.fromhex(entry["c1"]))
    rid = "ps-porep-%d-%d-%d" % (MINER, SECTOR, task_id)
    return porep_request(entry, wrap_c1(c1, SECTOR, SIZE), rid)


def winning(entry):
    r = masked(entry["randomness"])
    return pb.SubmitProofRequest(
        request_id="winpost-%d-%s" % (MINER, r[:8].hex()),  # Go: %x of randomness[:8]
        proof_kind=pb.WINNING_POST,
        sector_size=SIZE,
        registered_proof=entry["registered_proof"],
        priority=pb.CRITICAL,
        vanilla_proofs=[bytes.fromhex(v) for v in entry["vanilla_proofs"]],
        miner_id=MINER,
        randomness=r,
    )


def window(entry):
    r = masked(entry["randomness"])
    part = 0  # the index within Curio's batch of one partition
    go_bytes = "[" + " ".join(str(b) for b in r[:8]) + "]"  # Go: %d of a byte slice
    return pb.SubmitProofRequest(
        request_id="wdpost-%d-%d-%s" % (MINER, part, go_bytes),
        proof_kind=pb.WINDOW_POST_PARTITION,
        sector_size=SIZE,
        registered_proof=entry["registered_proof"],
        priority=pb.HIGH,
        vanilla_proofs=[bytes.fromhex(v) for v in entry["vanilla_proofs"]],
        miner_id=MINER,
        randomness=r,
        partition_index=part,
    )


def snap(entry):
    return pb.SubmitProofRequest(
        request_id="snap-%d-%d" % (MINER, SECTOR),
        proof_kind=pb.SNAP_DEALS_UPDATE,
        sector_size=SIZE,
        registered_proof=entry["registered_proof"],
        priority=pb.NORMAL,
        vanilla_proofs=[bytes.fromhex(v) for v in entry["vanilla_proofs"]],
        sector_number=SECTOR,
        miner_id=MINER,
        comm_r_old=bytes.fromhex(entry["comm_r_old"]),
        comm_r_new=bytes.fromhex(entry["comm_r_new"]),
        comm_d_new=bytes.fromhex(entry["comm_d_new"]),
    )


def expect(cond, what):
    if not cond:
        raise SystemExit("unexpected: " + what)


out = {"proofs": {}, "jobs": {}, "refused": {}}
MAX = 256 << 20  # lib/cuzk/client.go: MaxCallSendMsgSize / MaxCallRecvMsgSize
with grpc.insecure_channel(
    target,
    options=[
        ("grpc.max_send_message_length", MAX),
        ("grpc.max_receive_message_length", MAX),
        # grpc-go sends "localhost" as the :authority over a unix socket; so do we
        ("grpc.default_authority", "localhost"),
    ],
) as ch:
    stub = rpc.ProvingEngineStub(ch)
    st = stub.GetStatus(pb.GetStatusRequest(), timeout=5)  # HasCapacity's call
    expect(len(st.queues) == 4, "four queues")

    def prove(name, req):
        r = stub.Prove(pb.ProveRequest(submit=req), timeout=PROVE_TIMEOUT).result
        expect(r.status == pb.AwaitProofResponse.COMPLETED, name + " COMPLETED: " + r.error_message)
        expect(len(r.proof) > 0, name + ": a proof")
        out["proofs"][name] = r.proof.hex()
        out["jobs"][name] = r.job_id

    prove("winning-post", winning(S["winning"]))
    prove("window-post", window(S["window"]))
    prove("porep", porep(S["porep"]))
    prove("porep-synthetic", porep(S["porep_synthetic"]))
    prove("porep-proofshare", proofshare_porep(S["porep"], 17))
    prove("snap-deals", snap(S["snap"]))
    # harmonytask retries a task with the same id: a proved request comes back at once
    prove("porep-again", porep(S["porep"]))

    def refused(name, req):
        try:
            stub.Prove(pb.ProveRequest(submit=req), timeout=PROVE_TIMEOUT)
        except grpc.RpcError as e:
            out["refused"][name] = [e.code().name, e.details()]
            return
        raise SystemExit("unexpected: %s was proved" % name)

    entry = S["porep"]
    c1 = bytes.fromhex(entry["c1"])
    env = json.loads(wrap_c1(c1, SECTOR, SIZE))
    env["Phase1Out"] = "not base64!"
    refused("bad-base64", porep_request(entry, go_json(env).encode(), "porep-bad-1"))
    refused("size-mismatch", porep_request(entry, wrap_c1(c1, SECTOR, 8 << 20), "porep-bad-2"))
    whole = wrap_c1(c1, SECTOR, SIZE)
    refused("truncated", porep_request(entry, whole[: len(whole) // 2], "porep-bad-3"))
    unknown = c1.replace(b'"StackedDrg2KiBV1_1"', b'"StackedDrg2KiBV1_9"')
    refused("unknown-proof", porep_request(entry, wrap_c1(unknown, SECTOR, SIZE), "porep-bad-4"))
    refused("sector-mismatch", porep_request(entry, wrap_c1(c1, SECTOR + 1, SIZE), "porep-bad-5"))

    # one bit of a WinningPoSt vanilla proof changed (its comm_r_last): found during
    # synthesis, refused once as invalid input
    tampered = winning(S["winning"])
    vp = bytearray(tampered.vanilla_proofs[0])
    vp[-32] ^= 1
    del tampered.vanilla_proofs[:]
    tampered.vanilla_proofs.append(bytes(vp))
    tampered.request_id = "winpost-tampered"
    refused("tampered-winning", tampered)

    # ...and it still serves (a new id: a new job; WindowPoSt, the smallest circuit)
    after = window(S["window"])
    after.request_id = "wdpost-after-the-refusals"
    prove("window-post-after", after)
    st = stub.GetStatus(pb.GetStatusRequest(), timeout=5)
    out["completed"] = st.total_proofs_completed

print(json.dumps(out))
