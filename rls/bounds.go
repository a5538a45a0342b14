package rls

import (
	"fmt"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The bounds of one request (docs/design.md's table of bounds): a request
// past any of them is refused whole, with INVALID_ARGUMENT over gRPC and
// 400 on /json, and counts nothing. Each descriptor's counter key is made
// of its entries, so these also bound the bytes a request can make the
// key table and the store hold: at most MaxDescriptors keys of at most
// MaxDescriptorBytes each (plus the domain).
const (
	MaxDescriptors     = 64      // descriptors in a request
	MaxEntries         = 32      // entries in a descriptor
	MaxKeyBytes        = 256     // an entry's key, and the domain
	MaxValueBytes      = 4096    // an entry's value
	MaxDescriptorBytes = 8192    // a descriptor's keys and values together
	MaxJSONBytes       = 1 << 20 // a /json request's body (413 past it)
)

// checkBounds refuses a request past one of the bounds, saying which.
func checkBounds(req *pb.RateLimitRequest) error {
	bad := func(format string, a ...any) error {
		return status.Error(codes.InvalidArgument, fmt.Sprintf(format, a...))
	}
	if n := len(req.GetDomain()); n > MaxKeyBytes {
		return bad("domain of %d bytes: at most %d", n, MaxKeyBytes)
	}
	if n := len(req.GetDescriptors()); n > MaxDescriptors {
		return bad("%d descriptors in one request: at most %d", n, MaxDescriptors)
	}
	for i, d := range req.GetDescriptors() {
		es := d.GetEntries()
		if len(es) > MaxEntries {
			return bad("descriptor %d has %d entries: at most %d", i, len(es), MaxEntries)
		}
		size := 0
		for j, e := range es {
			switch k, v := len(e.GetKey()), len(e.GetValue()); {
			case k > MaxKeyBytes:
				return bad("descriptor %d, entry %d: a key of %d bytes: at most %d", i, j, k, MaxKeyBytes)
			case v > MaxValueBytes:
				return bad("descriptor %d, entry %d (%.64q): a value of %d bytes: at most %d", i, j, e.GetKey(), v, MaxValueBytes)
			default:
				size += k + v
			}
		}
		if size > MaxDescriptorBytes {
			return bad("descriptor %d: keys and values of %d bytes: at most %d", i, size, MaxDescriptorBytes)
		}
	}
	return nil
}
