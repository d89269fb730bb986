package gcs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"
)

// Error is a GCS answer other than success: the HTTP status and what the
// server said about it.
type Error struct {
	// Op is the request, such as "GET object" or "upload".
	Op string
	// Code is the HTTP status.
	Code int
	// Reason is the JSON API's reason, such as "conditionNotMet"; empty
	// when the body was not a JSON error.
	Reason  string
	Message string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("gcs: %s: HTTP %d", e.Op, e.Code)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// HTTPStatusCode is the HTTP status, as retry.HTTPStatus looks for it.
func (e *Error) HTTPStatusCode() int { return e.Code }

// Status is the HTTP status of a GCS error, 0 if it carries none: pass it
// to cloud.WithHTTPStatus for a GCS bucket opened some other way. It reads
// this package's *Error and gcsblob's *googleapi.Error.
func Status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// errUnimplemented is the error of what the driver does not do.
var errUnimplemented = errors.New("gcs: not supported by trove's GCS driver")

// errorCode maps err as gcsblob does, so that stores see the same codes:
// 403 is NotFound there too (a bucket one may not read looks missing).
func errorCode(err error) gcerrors.ErrorCode {
	if errors.Is(err, errUnimplemented) {
		return gcerrors.Unimplemented
	}
	var e *Error
	if !errors.As(err, &e) {
		return gcerrors.Unknown
	}
	switch e.Code {
	case http.StatusForbidden, http.StatusNotFound:
		return gcerrors.NotFound
	case http.StatusPreconditionFailed:
		return gcerrors.FailedPrecondition
	case http.StatusTooManyRequests:
		return gcerrors.ResourceExhausted
	}
	return gcerrors.Unknown
}

// responseError reads res's body, closes it and makes an *Error of it.
func responseError(op string, res *http.Response) error {
	defer res.Body.Close()
	// Enough for any error GCS sends; the rest is dropped with the body.
	body, _ := io.ReadAll(io.LimitReader(res.Body, 8<<10))
	e := &Error{Op: op, Code: res.StatusCode}
	var doc struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Error.Message != "" {
		e.Message = doc.Error.Message
		if len(doc.Error.Errors) > 0 {
			e.Reason = doc.Error.Errors[0].Reason
		}
	} else {
		e.Message = strings.TrimSpace(string(body))
	}
	return e
}
