"""An OTLP/gRPC trace receiver built from the official opentelemetry-proto definitions
(not cuzk's code): it accepts ExportTraceServiceRequest on 127.0.0.1 (port printed as
"listening PORT"), and appends one JSON line per span to the file given as argv[1]:
name, trace/span/parent ids (hex), attributes, and the resource's service.name."""
import json
import sys
from concurrent import futures

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, path):
        self.path = path

    def Export(self, request, context):
        with open(self.path, "a") as out:
            for rs in request.resource_spans:
                resource = {a.key: value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.write(json.dumps({
                            "name": s.name,
                            "trace": s.trace_id.hex(),
                            "span": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(),
                            "attributes": {a.key: value(a.value) for a in s.attributes},
                            "service": resource.get("service.name"),
                        }) + "\n")
        return trace_service_pb2.ExportTraceServiceResponse()


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Receiver(sys.argv[1]), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
