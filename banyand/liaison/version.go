package liaison

import (
	"context"
	"runtime/debug"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
)

// APIVersion is the BanyanDB public API version banyand speaks. Clients
// check it first: SkyWalking OAP refuses a server whose version is not in
// its compatible list.
const APIVersion = "0.10"

// VersionService serves banyandb.common.v1.Service.
type VersionService struct {
	commonv1.UnimplementedServiceServer
	revision string
}

func newVersionService() *VersionService { return &VersionService{revision: buildRevision()} }

// GetAPIVersion answers APIVersion and the build's source revision.
func (s *VersionService) GetAPIVersion(context.Context, *commonv1.GetAPIVersionRequest) (*commonv1.GetAPIVersionResponse, error) {
	return &commonv1.GetAPIVersionResponse{Version: &commonv1.APIVersion{Version: APIVersion, Revision: s.revision}}, nil
}

// buildRevision is the VCS revision the binary was built from, or "" when
// the build recorded none (go run, tests).
func buildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
