package rls

import (
	"fmt"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// dynamicMetadata is the response's dynamic metadata, as
// envoyproxy/ratelimit's RESPONSE_DYNAMIC_METADATA gives it: the domain,
// each descriptor's entries ("key=value"), override and hits_addend, the
// request's hits_addend, and the metadata of the limits the request passed,
// merged (the first value of a field wins; structs merge).
func dynamicMetadata(req *pb.RateLimitRequest, passed []*RateLimit) *structpb.Struct {
	f := map[string]*structpb.Value{"domain": structpb.NewStringValue(req.GetDomain())}
	var descs []*structpb.Value
	for _, d := range req.GetDescriptors() {
		if d == nil {
			continue
		}
		var entries []*structpb.Value
		for _, e := range d.GetEntries() {
			entries = append(entries, structpb.NewStringValue(fmt.Sprintf("%s=%s", e.GetKey(), e.GetValue())))
		}
		df := map[string]*structpb.Value{"entries": structpb.NewListValue(&structpb.ListValue{Values: entries})}
		if d.GetLimit() != nil {
			df["limit"] = structpb.NewStringValue(d.GetLimit().String())
		}
		if h := d.GetHitsAddend(); h != nil {
			df["hitsAddend"] = structpb.NewNumberValue(float64(h.GetValue()))
		}
		descs = append(descs, structpb.NewStructValue(&structpb.Struct{Fields: df}))
	}
	f["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: descs})
	if h := req.GetHitsAddend(); h != 0 {
		f["hitsAddend"] = structpb.NewNumberValue(float64(h))
	}
	merged := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for _, l := range passed {
		mergeStruct(merged, l.Metadata)
	}
	if len(merged.Fields) > 0 {
		f["metadata"] = structpb.NewStructValue(merged)
	}
	return &structpb.Struct{Fields: f}
}

// mergeStruct adds src's fields to dst: a field dst lacks is copied, two
// structs merge, and otherwise dst's value stays.
func mergeStruct(dst, src *structpb.Struct) {
	for k, v := range src.GetFields() {
		have, ok := dst.Fields[k]
		switch {
		case !ok:
			dst.Fields[k] = proto.CloneOf(v) // the config's own stays untouched
		case have.GetStructValue() != nil && v.GetStructValue() != nil:
			mergeStruct(have.GetStructValue(), v.GetStructValue())
		}
	}
}
