package stackgrow

// Grow makes the runtime grow this goroutine's stack to hold Size bytes more than it
// uses now. Its frame is reserved by the function's prologue and never written: unlike
// a Go array of the same size it is not zeroed (grow_amd64.s).
func Grow()
