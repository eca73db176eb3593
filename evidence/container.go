package evidence

import (
	"fmt"
	"strings"
)

// containerText names a container's image exactly: its reference, its
// content digest, its registry digests (or that it was built locally) and
// the engine.
func containerText(c *ContainerEnv) string {
	if c == nil {
		return "image not recorded"
	}
	digests := "built locally, no registry digest"
	if len(c.RepoDigests) > 0 {
		digests = "registry digest " + strings.Join(c.RepoDigests, ", ")
	}
	return fmt.Sprintf("image %s, id %s, %s; %s through testcontainers-go", c.Image, c.ImageID, digests, c.Engine)
}

// kfakeBroker tells whether the broker was franz-go's kfake: embedded, or
// in a container whose image says so (the implementation recorded).
func kfakeBroker(k KafkaEnv) bool {
	return k.Mode == KafkaEmbedded || (k.Mode == KafkaContainer && strings.HasPrefix(k.Implementation, "kfake"))
}
