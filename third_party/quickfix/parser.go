// Copyright (c) quickfixengine.org  All rights reserved.
//
// This file may be distributed under the terms of the quickfixengine.org
// license as defined by quickfixengine.org and appearing in the file
// LICENSE included in the packaging of this file.
//
// This file is provided AS IS with NO WARRANTY OF ANY KIND, INCLUDING
// THE WARRANTY OF DESIGN, MERCHANTABILITY AND FITNESS FOR A
// PARTICULAR PURPOSE.
//
// See http://www.quickfixengine.org/LICENSE for licensing information.
//
// Contact ask@quickfixengine.org if any conditions of this licensing
// are not clear to you.

package quickfix

import (
	"bytes"
	"errors"
	"io"
	"time"
)

const (
	defaultBufSize = 4096

	// DefaultMaxMessageSize bounds one message (header, body and trailer) when the
	// MaxMessageSize setting is absent: a peer is not trusted with the process's memory.
	DefaultMaxMessageSize = 4 << 20

	// maxHeadLen bounds "8=<BeginString>\x019=<BodyLength>\x01", the frame's head.
	maxHeadLen = 64
	// maxTagDigits bounds a tag number (FIX tags are at most 9 digits, no int overflow).
	maxTagDigits = 9
)

// errMessageTooLarge ends a connection whose next message would not fit the bound.
var errMessageTooLarge = errors.New("message larger than MaxMessageSize")

type parser struct {
	// Buffer is a slice of bigBuffer.
	bigBuffer, buffer []byte
	reader            io.Reader
	lastRead          time.Time
	// max bounds the unconsumed buffer (the message being read): the parser never holds
	// more than about twice this, whatever the peer sends.
	max int
}

func newParser(reader io.Reader, maxMessageSize int) *parser {
	if maxMessageSize <= 0 {
		maxMessageSize = DefaultMaxMessageSize
	}
	return &parser{reader: reader, max: maxMessageSize}
}

func (p *parser) readMore() (int, error) {
	if len(p.buffer) == cap(p.buffer) {
		// The buffer holds the start of one message (garbage before "8=" is dropped):
		// growing it past the bound would let a peer buy memory with one endless frame.
		if len(p.buffer) >= p.max+maxHeadLen+len("10=000\001") {
			return 0, errMessageTooLarge
		}
		var newBuffer []byte
		switch {
		// Initialize the parser.
		case len(p.bigBuffer) == 0:
			p.bigBuffer = make([]byte, defaultBufSize)
			newBuffer = p.bigBuffer[0:0]

		// Shift buffer back to the start of bigBuffer.
		case 2*len(p.buffer) <= len(p.bigBuffer):
			newBuffer = p.bigBuffer[0:len(p.buffer)]

		// Reallocate big buffer with enough space to shift buffer.
		default:
			p.bigBuffer = make([]byte, 2*len(p.buffer))
			newBuffer = p.bigBuffer[0:len(p.buffer)]
		}

		copy(newBuffer, p.buffer)
		p.buffer = newBuffer
	}

	n, e := p.reader.Read(p.buffer[len(p.buffer):cap(p.buffer)])
	p.lastRead = time.Now()
	p.buffer = p.buffer[:len(p.buffer)+n]
	return n, e
}

func (p *parser) findIndex(delim []byte) (int, error) {
	return p.findIndexAfterOffset(0, delim)
}

func (p *parser) findIndexAfterOffset(offset int, delim []byte) (int, error) {
	for {
		if offset > len(p.buffer) {
			if n, err := p.readMore(); n == 0 && err != nil {
				return -1, err
			}

			continue
		}

		if index := bytes.Index(p.buffer[offset:], delim); index != -1 {
			return index + offset, nil
		}

		n, err := p.readMore()

		if n == 0 && err != nil {
			return -1, err
		}
	}
}

// findStart finds the next "8=", dropping what comes before it as it reads, so garbage
// between frames does not accumulate.
func (p *parser) findStart() (int, error) {
	for {
		if i := bytes.Index(p.buffer, []byte("8=")); i != -1 {
			return i, nil
		}
		if n := len(p.buffer); n > 0 {
			keep := 0
			if p.buffer[n-1] == '8' {
				keep = 1
			}
			p.buffer = p.buffer[n-keep:]
		}
		if n, err := p.readMore(); n == 0 && err != nil {
			return -1, err
		}
	}
}

func (p *parser) findEndAfterOffset(offset int) (int, error) {
	index, err := p.findIndexAfterOffset(offset, []byte("\00110="))
	if err != nil {
		return index, err
	}

	index, err = p.findIndexAfterOffset(index+1, []byte("\001"))
	if err != nil {
		return index, err
	}

	return index + 1, nil
}

// jumpLength reads the frame's head, BeginString then BodyLength (the first two fields,
// as FIX requires), and returns the index of the SOH that ends the body. A head that is
// too long, a missing BodyLength or one above the bound is an error: the connection ends.
func (p *parser) jumpLength() (int, error) {
	var head []byte
	for {
		head = p.buffer[:min(len(p.buffer), maxHeadLen)]
		if i := bytes.IndexByte(head, '\001'); i != -1 && bytes.IndexByte(head[i+1:], '\001') != -1 {
			break
		}
		if len(head) == maxHeadLen {
			return 0, errors.New("frame head (BeginString, BodyLength) too long")
		}
		if n, err := p.readMore(); n == 0 && err != nil {
			return 0, err
		}
	}
	soh := bytes.IndexByte(head, '\001')
	if !bytes.HasPrefix(head[soh+1:], []byte("9=")) {
		return 0, errors.New("BodyLength (9) must follow BeginString (8)")
	}
	lengthIndex := soh + 3
	offset := lengthIndex + bytes.IndexByte(head[lengthIndex:], '\001')

	if offset == lengthIndex {
		return 0, errors.New("No length given")
	}

	length, err := atoi(p.buffer[lengthIndex:offset])
	if err != nil {
		return length, err
	}

	if length <= 0 {
		return length, errors.New("Invalid length")
	}
	if length > p.max {
		return length, errMessageTooLarge
	}

	return offset + length, nil
}

// checkTags refuses a frame with a tag number longer than maxTagDigits or not a number:
// a garbled or hostile peer, whose connection ends.
func checkTags(frame []byte) error {
	for len(frame) > 0 {
		eq := bytes.IndexByte(frame, '=')
		if eq == -1 {
			return nil // the trailing SOH
		}
		if eq == 0 || eq > maxTagDigits {
			return errors.New("bad tag number in frame")
		}
		for _, c := range frame[:eq] {
			if c < '0' || c > '9' {
				return errors.New("bad tag number in frame")
			}
		}
		soh := bytes.IndexByte(frame[eq:], '\001')
		if soh == -1 {
			return nil
		}
		frame = frame[eq+soh+1:]
	}
	return nil
}

func (p *parser) ReadMessage() (msgBytes *bytes.Buffer, err error) {
	start, err := p.findStart()
	if err != nil {
		return
	}
	p.buffer = p.buffer[start:]

	index, err := p.jumpLength()
	if err != nil {
		return
	}

	index, err = p.findEndAfterOffset(index)
	if err != nil {
		return
	}

	if err = checkTags(p.buffer[:index]); err != nil {
		return
	}

	msgBytes = new(bytes.Buffer)
	msgBytes.Reset()
	msgBytes.Write(p.buffer[:index])
	p.buffer = p.buffer[index:]

	return
}
