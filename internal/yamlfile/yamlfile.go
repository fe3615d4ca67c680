package yamlfile

import (
	"fmt"
	"os"
)

// Load reads the file at path and hands its content to parse. A read
// error says which kind of file could not be read ("reading topology
// file: open …"); a parse error names the file too ("topology file
// /x.yaml: zones[0]: …"), as the owner's Parse cannot know the path.
func Load[T any](kind, path string, parse func([]byte) (T, error)) (T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("reading %s: %w", kind, err)
	}
	v, err := parse(data)
	if err != nil {
		return v, fmt.Errorf("%s %s: %w", kind, path, err)
	}
	return v, nil
}
