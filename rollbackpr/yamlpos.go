package rollbackpr

import (
	"fmt"
	"unicode/utf8"
)

// lineIndex maps yaml.v3's (line, column) positions back to byte offsets. yaml.v3 counts
// columns in characters, not bytes, treats CR LF, CR, LF, NEL, LS and PS as line breaks,
// and does not count a leading byte-order mark.
type lineIndex struct {
	src    []byte
	starts []int // byte offset where each line begins; starts[0] is line 1
}

func newLineIndex(src []byte) lineIndex {
	first := 0
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		first = 3
	}
	starts := []int{first}
	for i := first; i < len(src); {
		switch {
		case src[i] == '\r' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case src[i] == '\r' || src[i] == '\n':
			i++
		case src[i] == 0xC2 && i+1 < len(src) && src[i+1] == 0x85: // NEL
			i += 2
		case src[i] == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && (src[i+2] == 0xA8 || src[i+2] == 0xA9): // LS, PS
			i += 3
		default:
			_, size := utf8.DecodeRune(src[i:])
			i += size
			continue
		}
		starts = append(starts, i)
	}
	return lineIndex{src: src, starts: starts}
}

// offset returns the byte offset of the 1-based (line, column) position.
func (x lineIndex) offset(line, column int) (int, error) {
	if line < 1 || line > len(x.starts) || column < 1 {
		return 0, fmt.Errorf("position %d:%d is outside the file", line, column)
	}
	i := x.starts[line-1]
	for col := 1; col < column; col++ {
		if i >= len(x.src) {
			return 0, fmt.Errorf("position %d:%d is outside the file", line, column)
		}
		_, size := utf8.DecodeRune(x.src[i:])
		i += size
	}
	return i, nil
}
