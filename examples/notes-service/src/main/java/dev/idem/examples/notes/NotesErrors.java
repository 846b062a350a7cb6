package dev.idem.examples.notes;

import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.multipart.MaxUploadSizeExceededException;
import org.springframework.web.multipart.MultipartException;

/**
 * Errors raised before a controller is chosen, which a controller's own exception handlers do not
 * see. Spring MVC parses every {@code multipart/*} request before it looks for the handler; a
 * multipart body it cannot parse (no boundary, truncated) is then a {@link MultipartException},
 * which Spring MVC itself answers 500. It is the request's fault: 400 (413 when it is too large).
 */
@RestControllerAdvice
class NotesErrors {

  /** A multipart body that cannot be parsed: 400; one larger than the configured limits: 413. */
  @ExceptionHandler(MultipartException.class)
  ResponseEntity<ProblemDetail> unreadableMultipart(MultipartException e) {
    boolean tooLarge = e instanceof MaxUploadSizeExceededException;
    HttpStatus status = tooLarge ? HttpStatus.PAYLOAD_TOO_LARGE : HttpStatus.BAD_REQUEST;
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(status,
        tooLarge ? "the multipart body is larger than the service accepts" : "the multipart body cannot be read (no boundary, or truncated)");
    problem.setTitle(tooLarge ? "Body too large" : "Unreadable multipart body");
    return ResponseEntity.status(status).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(problem);
  }
}
