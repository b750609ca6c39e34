//go:build !amd64

package stackgrow

// Grow makes the runtime grow this goroutine's stack to hold Size bytes more than it
// uses now (here with a zeroed array: only amd64 has the frame without the zeroing).
func Grow() { pad(0) }

//go:noinline
func pad(i int) byte {
	var p [Size]byte
	p[i] = 1
	return p[(i+1)%Size]
}
